package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;

import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A daemon whose state directory is on a loop-mounted XFS with reflink (the opt-in that tests of
 * reflink storage use: {@link Daemons#xfsStateDir}) runs sandboxes there, and the mount is cleaned
 * up after it.
 */
class XfsStateDirIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path work;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    private static String run(String... argv) throws Exception {
        Bounded.Ran ran = Bounded.run(Duration.ofSeconds(60), argv);
        assertEquals(0, ran.exitCode(), ran.output());
        return ran.output().strip();
    }

    @Test
    void aDaemonRunsSandboxesWithItsStateOnXfs() throws Exception {
        Path state = daemons.xfsStateDir(work);
        Daemon daemon = daemons.start(state);
        assertEquals("xfs", run("stat", "-f", "-c", "%T", state.toString()), "the state directory is on XFS");
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String id = api.createSandbox();
        assertEquals("hello", Api.sh(api, id, "echo hello > /work/f && cat /work/f").strip());
        assertTrue(run("find", state.toString(), "-path", "*" + id + "*").contains(id),
                "the sandbox's files are under the state directory on XFS");
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
    }
}
