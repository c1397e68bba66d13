package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.EvalResult;
import io.vivarium.api.spi.SandboxInstance;

import org.junit.jupiter.api.Assumptions;

/**
 * The suite's eval check, in a class of its own: only a backend that reports
 * {@code eval} gets here.
 */
final class EvalCheck {
    private EvalCheck() {
    }

    static void run(SandboxInstance i) {
        EvalResult first;
        try {
            first = i.channel().evaluate("kit_x = 41", 30);
        } catch (ApiException e) {
            Assumptions.assumeFalse(e.status() == 422, () -> "the instance has no Python: " + e.getMessage());
            throw e;
        }
        assertEquals(0, first.exitCode(), "an assignment runs: " + first);
        assertNull(first.result(), "an assignment has no value");
        EvalResult next = i.channel().evaluate("print('kit')\nkit_x + 1", 30);
        assertEquals("42", next.result(), "the interpreter keeps its state between evals: " + next);
        assertEquals("kit\n", next.stdout(), "what the code printed comes back");
        EvalResult raised = i.channel().evaluate("raise ValueError('kit')", 30);
        assertNotEquals(0, raised.exitCode(), "an exception is a non-zero exit code");
        assertNull(raised.result());
        assertTrue(raised.error() != null && raised.error().contains("ValueError: kit"), "and an error: " + raised);
    }
}
