package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LaunchFilesTest {

    @TempDir
    Path dir;

    @Test
    void theChildPidIsKnownOnceBwrapHasWrittenTheWholeInfo() throws IOException {
        LaunchFiles files = LaunchFiles.in(dir);
        assertEquals(Optional.empty(), files.childPid(), "no file yet");
        Files.writeString(files.infoFile(), "");
        assertEquals(Optional.empty(), files.childPid(), "opened, nothing written");
        Files.writeString(files.infoFile(), "{\n    \"child-pid\": 4242");
        assertEquals(Optional.empty(), files.childPid(), "written in part");
        Files.writeString(files.infoFile(), "{\n    \"child-pid\": 4242,\n    \"cgroup-namespace\": 4026532421\n}\n");
        assertEquals(Optional.of(4242L), files.childPid());
    }

    @Test
    void infoWithoutAChildPidGivesNone() throws IOException {
        LaunchFiles files = LaunchFiles.in(dir);
        Files.writeString(files.infoFile(), "{ \"cgroup-namespace\": 4026532421 }");
        assertEquals(Optional.empty(), files.childPid());
        Files.writeString(files.infoFile(), "not json }");
        assertEquals(Optional.empty(), files.childPid());
    }
}
