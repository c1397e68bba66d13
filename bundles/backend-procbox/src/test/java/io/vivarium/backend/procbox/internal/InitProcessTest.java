package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class InitProcessTest {
    @Test
    void aProcessFoundRunningIsSeenGoneAtOnceThoughItsFullLookStandsForASecond() throws Exception {
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            InitProcess init = InitProcess.find(sleeper.pid()).orElseThrow();
            assertTrue(init.runs());
            assertTrue(init.runs(), "within the second: only whether the pid exists");
            sleeper.destroyForcibly();
            assertTrue(sleeper.waitFor(10, TimeUnit.SECONDS));
            assertFalse(init.runs(), "its pid is gone: seen at once, not a second later");
            assertFalse(init.isRunning());
        } finally {
            sleeper.destroyForcibly();
        }
    }

    @Test
    void aZombieIsNotRunningThoughItsPidStillExists() throws Exception {
        // a child whose parent never waits for it: once killed it stays a zombie
        Process parent = new ProcessBuilder("python3", "-c",
                "import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(60)\n    os._exit(0)\n"
                        + "print(pid, flush=True)\ntime.sleep(60)").start();
        try {
            long child = Long.parseLong(new java.io.BufferedReader(new java.io.InputStreamReader(parent.getInputStream()))
                    .readLine().strip());
            InitProcess init = InitProcess.find(child).orElseThrow();
            assertTrue(init.runs(), "the full look, which stands for a second");
            ProcessHandle.of(child).orElseThrow().destroyForcibly();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (ProcFs.liveStartTime(child).isPresent() && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertTrue(Files.exists(Path.of("/proc", Long.toString(child))), "a zombie: its parent has not reaped it");
            assertFalse(init.runs(), "a zombie is not running, within the second after a full look too");
        } finally {
            parent.destroyForcibly();
        }
    }

    @Test
    void anotherProcessOnTheSamePidIsNotIt() throws Exception {
        long self = ProcessHandle.current().pid();
        InitProcess impostor = new InitProcess(self, "1");
        assertFalse(impostor.runs(), "a start time that is not this pid's: not the same process");
        assertFalse(impostor.runs());
        assertEquals(InitProcess.find(self).orElseThrow(), InitProcess.find(self).orElseThrow(), "equal by pid and start time");
        assertNotEquals(impostor, InitProcess.find(self).orElseThrow());
    }
}
