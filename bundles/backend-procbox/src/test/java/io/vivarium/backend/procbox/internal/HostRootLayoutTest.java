package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostRootLayoutTest {

    @TempDir
    Path root;

    @Test
    void symlinksMergedDirectoriesBindsRealOnesAndSkipsMissingOnes() throws IOException {
        Files.createSymbolicLink(root.resolve("bin"), Path.of("usr/bin"));
        Files.createSymbolicLink(root.resolve("lib"), Path.of("usr/lib"));
        Files.createDirectory(root.resolve("lib64"));

        assertEquals(List.of("--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
                "--ro-bind", root.resolve("lib64").toString(), "/lib64"), HostRootLayout.bwrapArgs(root));
    }
}
