package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ExecResult;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Runs host commands under setsid, as the channel does, without a sandbox. */
class ProcessRunnerTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin");

    private final List<Long> backgroundPids = new ArrayList<>();

    @AfterEach
    void killBackgroundProcesses() {
        backgroundPids.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
    }

    private static ExecResult run(Map<String, String> env, String stdin, int timeoutSecs, int cap, String... args) {
        List<String> argv = new ArrayList<>(List.of("/usr/bin/setsid"));
        argv.addAll(List.of(args));
        return ProcessRunner.run(argv, env, stdin, Duration.ofSeconds(timeoutSecs), cap);
    }

    private static ExecResult run(String... args) {
        return run(ENV, null, 10, 1 << 20, args);
    }

    private static boolean goneWithin(long pid, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (ProcFs.liveStartTime(pid).isPresent()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Sleep.briefly(10);
        }
        return true;
    }

    @Test
    void capturesOutputAndExitCode() {
        ExecResult result = run("sh", "-c", "echo out; echo err >&2; exit 3");

        assertEquals("out\n", result.stdout());
        assertEquals("err\n", result.stderr());
        assertEquals(3, result.exitCode());
        assertFalse(result.timedOut());
        assertFalse(result.truncated());
    }

    @Test
    void usesExactlyTheGivenEnvironmentAndStdin() {
        ExecResult env = run(Map.of("ONLY", "this"), null, 10, 1000, "/usr/bin/env");
        ExecResult stdin = run(ENV, "héllo\n", 10, 1000, "cat");

        assertEquals("ONLY=this\n", env.stdout());
        assertEquals("héllo\n", stdin.stdout());
    }

    @Test
    void returnsWhenTheCommandIgnoresItsStdin() {
        ExecResult result = run(ENV, "x".repeat(1 << 20), 10, 1000, "true");

        assertEquals(0, result.exitCode());
    }

    @Test
    void reportsDeathBySignalAs128PlusTheSignal() {
        assertEquals(143, run("sh", "-c", "kill -TERM $$").exitCode());
    }

    @Test
    void capsEachStreamAndKeepsDraining() {
        ExecResult result = run(ENV, null, 10, 1000, "sh", "-c", "head -c 5000000 /dev/zero; echo done >&2");

        assertTrue(result.truncated());
        assertEquals(1000, result.stdout().length());
        assertEquals("done\n", result.stderr());
        assertEquals(0, result.exitCode());
    }

    @Test
    void returnsWhenTheCommandExitsEvenIfABackgroundChildHoldsStdout() {
        ExecResult result = run("sh", "-c", "sleep 300 & echo $!");
        long background = Long.parseLong(result.stdout().trim());
        backgroundPids.add(background);

        // a run that waited for stdout's end would time out, and its timeout kills the child
        assertEquals(0, result.exitCode());
        assertFalse(result.timedOut());
        assertTrue(ProcFs.liveStartTime(background).isPresent(), "the background process keeps running");
    }

    @Test
    void timeoutKillsTheWholeProcessGroup() {
        ExecResult result = run(ENV, null, 1, 1000, "sh", "-c", "sleep 301 & echo $!; sleep 30");
        long background = Long.parseLong(result.stdout().trim());
        backgroundPids.add(background);

        assertTrue(result.timedOut());
        assertEquals(137, result.exitCode());
        assertTrue(goneWithin(background, Duration.ofSeconds(2)), "background process " + background + " survived");
    }
}
