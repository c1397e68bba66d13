package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
    void anotherProcessOnTheSamePidIsNotIt() throws Exception {
        long self = ProcessHandle.current().pid();
        InitProcess impostor = new InitProcess(self, "1");
        assertFalse(impostor.runs(), "a start time that is not this pid's: not the same process");
        assertFalse(impostor.runs());
        assertEquals(InitProcess.find(self).orElseThrow(), InitProcess.find(self).orElseThrow(), "equal by pid and start time");
        assertNotEquals(impostor, InitProcess.find(self).orElseThrow());
    }
}
