package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A checkpoint restore's workspace swap leaves a whole workspace whatever stops it. */
class ContainerFilesTest {

    @TempDir
    Path tmp;

    private ContainerFiles files;

    @BeforeEach
    void liveWorkspace() throws IOException {
        files = ContainerFiles.of(tmp.resolve("sb"), tmp.resolve("links"), "sb");
        Files.createDirectories(files.workspace());
        Files.writeString(files.workspace().resolve("f"), "live");
    }

    @Test
    void aReplacedWorkspaceHasTheNewFilesAndNothingIsLeftBeside() throws IOException {
        files.replaceWorkspace(w -> {
            Files.createDirectories(w);
            Files.writeString(w.resolve("f"), "new");
        });

        assertEquals("new", Files.readString(files.workspace().resolve("f")));
        assertLeftoversGone();
    }

    @Test
    void aFillThatFailsHalfWayLeavesTheLiveWorkspace() throws IOException {
        IOException failure = new IOException("disk full");

        assertSame(failure, assertThrows(IOException.class, () -> files.replaceWorkspace(w -> {
            Files.createDirectories(w);
            Files.writeString(w.resolve("half"), "x");
            throw failure;
        })));

        assertEquals("live", Files.readString(files.workspace().resolve("f")));
        assertFalse(Files.exists(files.workspace().resolve("half")));
        assertLeftoversGone();
    }

    @Test
    void aSwapKilledBetweenItsRenamesIsUndone() throws IOException {
        Files.createDirectories(files.restoringWorkspace());
        Files.move(files.workspace(), files.replacedWorkspace());

        files.finishWorkspaceSwap();

        assertEquals("live", Files.readString(files.workspace().resolve("f")));
        assertLeftoversGone();
    }

    @Test
    void aSwapKilledBeforeTheOldWorkspaceWasDeletedKeepsTheNewOne() throws IOException {
        Files.move(files.workspace(), files.replacedWorkspace());
        Files.createDirectories(files.workspace());
        Files.writeString(files.workspace().resolve("f"), "new");

        files.finishWorkspaceSwap();

        assertEquals("new", Files.readString(files.workspace().resolve("f")));
        assertLeftoversGone();
    }

    @Test
    void aLeftoverOfAnInterruptedSwapIsCleanedByTheNextOne() throws IOException {
        Files.createDirectories(files.restoringWorkspace().resolve("stale"));

        files.replaceWorkspace(w -> {
            Files.createDirectories(w);
            Files.writeString(w.resolve("f"), "new");
        });

        assertFalse(Files.exists(files.workspace().resolve("stale")), "a fill into a fresh directory");
        assertLeftoversGone();
    }

    private void assertLeftoversGone() {
        assertFalse(Files.exists(files.restoringWorkspace()), "the half-made workspace");
        assertFalse(Files.exists(files.replacedWorkspace()), "the replaced workspace");
    }
}
