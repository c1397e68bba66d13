package io.vivarium.testkit.vmm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/** Fake VMM executables: scripts that run a test's fake VMM class in a JVM of its own, as the real binary would run. */
public final class FakeVmmProcess {
    private FakeVmmProcess() {
    }

    /** An executable {@code dir/name} that runs {@code main} with this JVM and its class path, passing its arguments. */
    public static Path executable(Path dir, String name, Class<?> main) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path script = dir.resolve(name);
        Files.writeString(script, "#!/bin/sh\nexec '" + java + "' -Xshare:auto -XX:TieredStopAtLevel=1 -cp '"
                + System.getProperty("java.class.path") + "' " + main.getName() + " \"$@\"\n");
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        return script;
    }

    /**
     * A guest image's directory as build-image.sh makes it ({@code imageDir/name}, a link to its
     * content-named directory), with empty kernel and initramfs: nothing boots them under a fake VMM.
     */
    public static Path image(Path imageDir, String name) throws IOException {
        Path dir = Files.createDirectories(imageDir.resolve(name + "-0000000000000000"));
        Files.writeString(dir.resolve("kernel"), "");
        Files.writeString(dir.resolve("initramfs.cpio.gz"), "");
        Files.writeString(dir.resolve("image.json"), "{\"agent\": \"vivarium\", \"cmdline\": \"console=ttyS0 panic=-1 quiet\"}");
        Files.createSymbolicLink(imageDir.resolve(name), dir.getFileName());
        return dir;
    }
}
