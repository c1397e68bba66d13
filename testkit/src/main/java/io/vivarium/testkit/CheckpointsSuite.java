package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

import org.junit.jupiter.api.Test;

/**
 * The contract of {@link Checkpoints}, on top of the backend contract: a backend whose bundle
 * registers the checkpoints seam extends this class instead of {@link SandboxBackendSuite} and
 * supplies the seam beside each backend object ({@link #checkpoints(SandboxBackend)}).
 */
public abstract class CheckpointsSuite extends SandboxBackendSuite {

    @Test
    void checkpointsAreTakenListedRestoredAndDeleted() throws IOException {
        Created c = create();
        Checkpoints cp = checkpoints(backend());
        SandboxInstance i = c.instance();
        CheckpointInfo info = cp.create(i, "t1", operation());
        assertEquals("t1", info.tag());
        assertNotNull(info.mode(), "a checkpoint says how it is stored");
        assertEquals(List.of("t1"), tags(cp, i));
        assertEquals(409, assertThrows(ApiException.class, () -> cp.create(i, "t1", operation())).status(),
                "a tag is taken once");
        assertEquals(404, assertThrows(ApiException.class, () -> cp.restore(i, "never-taken", operation())).status());

        SandboxInstance after = cp.restore(i, "t1", operation());
        replace(c, after);
        assertTrue(after.alive(), "the instance runs after a restore");
        assertTrue(after.channel().ping().pong(), "and answers");
        assertEquals(List.of("t1"), tags(cp, after), "a restored checkpoint stays, to be restored again");
        assertTrue(cp.delete(after, "t1"));
        assertFalse(cp.delete(after, "t1"), "deleting twice says there was none");
        assertTrue(cp.list(after).isEmpty());
    }

    @Test
    void aRestoreRevertsFilesAndEndsTheProcessesStartedSince() throws IOException {
        need(Feature.PROCESSES);
        Created c = create();
        Checkpoints cp = checkpoints(backend());
        exec(c.instance(), "/bin/sh", "-c", "echo before > kept");
        cp.create(c.instance(), "t1", operation());
        exec(c.instance(), "/bin/sh", "-c", "echo after > kept; echo new > added");
        String pid = startBackground(c.instance());

        SandboxInstance after = cp.restore(c.instance(), "t1", operation());
        replace(c, after);

        assertEquals("before\n", exec(after, "/bin/cat", "kept").stdout());
        assertEquals(1, exec(after, "/bin/sh", "-c", "test -e added").exitCode(), "a file made since is gone");
        assertFalse(processRuns(after, pid), "a process started since is gone");
    }

    @Test
    void aRestoredInstanceIsAdoptedEvenFromTheStateBeforeTheRestore() throws Exception {
        Created c = create();
        Checkpoints cp = checkpoints(backend());
        cp.create(c.instance(), "t1", operation());
        InstanceState before = c.instance().state();
        c = replace(c, cp.restore(c.instance(), "t1", operation()));

        // the daemon died between a relaunch and core persisting its new state
        SandboxInstance adopted = adoptByANewBackend(c, before);
        assertTrue(adopted.alive(), "the restored instance is found, not reported gone");
        assertEquals(List.of("t1"), tags(checkpoints(backend()), adopted), "its checkpoints survive the adoption");
    }

    /** The checkpoints seam the backend's bundle registers beside {@code backend} (the same revision). */
    protected abstract Checkpoints checkpoints(SandboxBackend backend);

    private static List<String> tags(Checkpoints cp, SandboxInstance instance) {
        return cp.list(instance).stream().map(CheckpointInfo::tag).toList();
    }
}
