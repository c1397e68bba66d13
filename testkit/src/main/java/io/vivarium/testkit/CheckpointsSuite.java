package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The contract of {@link Checkpoints} (SPI 1.3), on top of the backend contract: a backend whose
 * instances implement it extends this class instead of {@link SandboxBackendSuite}. Kept apart so
 * that a backend built against an older API, without these types, still runs the base suite.
 */
public abstract class CheckpointsSuite extends SandboxBackendSuite {

    @Test
    void checkpointsAreTakenListedRestoredAndDeleted() throws IOException {
        Created c = create();
        Checkpoints cp = checkpoints(c.instance());
        CheckpointInfo info = cp.create("t1", operation());
        assertEquals("t1", info.tag());
        assertNotNull(info.mode(), "a checkpoint says how it is stored");
        assertEquals(List.of("t1"), tags(cp));
        assertEquals(409, assertThrows(ApiException.class, () -> cp.create("t1", operation())).status(),
                "a tag is taken once");
        assertEquals(404, assertThrows(ApiException.class, () -> cp.restore("never-taken", operation())).status());

        SandboxInstance after = cp.restore("t1", operation());
        replace(c, after);
        assertTrue(after.alive(), "the instance runs after a restore");
        assertTrue(after.channel().ping().pong(), "and answers");
        Checkpoints again = checkpoints(after);
        assertEquals(List.of("t1"), tags(again), "a restored checkpoint stays, to be restored again");
        assertTrue(again.delete("t1"));
        assertFalse(again.delete("t1"), "deleting twice says there was none");
        assertTrue(again.list().isEmpty());
    }

    @Test
    void aRestoreRevertsFilesAndEndsTheProcessesStartedSince() throws IOException {
        need(Feature.PROCESSES);
        Created c = create();
        Checkpoints cp = checkpoints(c.instance());
        exec(c.instance(), "/bin/sh", "-c", "echo before > kept");
        cp.create("t1", operation());
        exec(c.instance(), "/bin/sh", "-c", "echo after > kept; echo new > added");
        String pid = startBackground(c.instance());

        SandboxInstance after = cp.restore("t1", operation());
        replace(c, after);

        assertEquals("before\n", exec(after, "/bin/cat", "kept").stdout());
        assertEquals(1, exec(after, "/bin/sh", "-c", "test -e added").exitCode(), "a file made since is gone");
        assertFalse(processRuns(after, pid), "a process started since is gone");
    }

    @Test
    void aRestoredInstanceIsAdoptedEvenFromTheStateBeforeTheRestore() throws Exception {
        Created c = create();
        Checkpoints cp = checkpoints(c.instance());
        cp.create("t1", operation());
        InstanceState before = c.instance().state();
        replace(c, cp.restore("t1", operation()));

        // the daemon died between a relaunch and core persisting its new state
        SandboxInstance adopted = adoptByANewBackend(c, before);
        assertTrue(adopted.alive(), "the restored instance is found, not reported gone");
        assertEquals(List.of("t1"), tags(checkpoints(adopted)), "its checkpoints survive the adoption");
    }

    /** The instance's checkpoints; the check is skipped when its instances have none. */
    private Checkpoints checkpoints(SandboxInstance instance) {
        Assumptions.assumeTrue(instance instanceof Checkpoints,
                () -> backend().name() + "'s instances do not implement Checkpoints");
        return (Checkpoints) instance;
    }

    private static List<String> tags(Checkpoints cp) {
        return cp.list().stream().map(CheckpointInfo::tag).toList();
    }

    /** The context core gives a checkpoint call: five minutes, never cancelled. */
    private static OperationContext operation() {
        return OperationContext.until(Instant.now().plus(Duration.ofMinutes(5)));
    }
}
