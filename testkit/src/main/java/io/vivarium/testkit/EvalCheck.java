package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.vivarium.api.ApiException;
import io.vivarium.api.EvalResult;
import io.vivarium.api.spi.SandboxInstance;

/**
 * The suite's eval check, for a backend that reports eval: the interpreter keeps its state between
 * evals, what the code prints comes back, and an exception is a non-zero exit code with its error.
 */
final class EvalCheck {
    private EvalCheck() {
    }

    /**
     * A backend that reports eval runs the suite on instances with an interpreter (its test gives a
     * spec with an image that has one): a 422 (no interpreter) is a failure, not a reason to skip.
     */
    static void run(SandboxInstance i) {
        EvalResult first;
        try {
            first = i.channel().evaluate("kit_x = 41", 30);
        } catch (ApiException e) {
            if (e.status() == 422) {
                fail("the backend reports eval but its instance has no interpreter (give the suite a spec whose "
                        + "image has Python): " + e.getMessage(), e);
            }
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
