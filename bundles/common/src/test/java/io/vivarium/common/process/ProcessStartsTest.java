package io.vivarium.common.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

class ProcessStartsTest {

    private static String stat(String comm, String state) {
        return "3734 (" + comm + ") " + state
                + " 3732 3732 3732 0 -1 4194560 110 0 0 0 0 0 0 0 20 0 1 0 8675309 2510848 211 18446744073709551615"
                + " 1 1 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    }

    @Test
    void readsTheStartTimeEvenWhenTheCommandNameHasSpacesAndParentheses() {
        assertEquals(Optional.of("8675309"), ProcessStarts.fromStat(stat("a) (b c", "S")));
    }

    @Test
    void treatsZombiesAsGone() {
        assertTrue(ProcessStarts.fromStat(stat("bwrap", "Z")).isEmpty());
    }

    @Test
    void seesThisProcessAndNoneAtAnImpossiblePid() {
        assertTrue(ProcessStarts.liveStartTime(ProcessHandle.current().pid()).isPresent());
        assertTrue(ProcessStarts.liveStartTime(Long.MAX_VALUE).isEmpty());
    }
}
