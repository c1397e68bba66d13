package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecResult;

import java.time.Duration;

import org.junit.jupiter.api.Test;

class GuestAgentExceptionTest {

    @Test
    void aCommandTheAgentCouldNotStartEndsAsAShellSaysIt() {
        ExecResult missing = GuestAgentException.agentError("vivarium-exec", "NotFound", "no such program").asStartFailure()
                .orElseThrow();
        assertEquals(127, missing.exitCode());
        assertEquals("guest agent refused vivarium-exec: no such program\n", missing.stderr());
        assertEquals(126, GuestAgentException.agentError("vivarium-exec", "PermissionDenied", "x").asStartFailure()
                .orElseThrow().exitCode());
        assertTrue(GuestAgentException.peer("gone").asStartFailure().isEmpty(), "not about the command");
    }

    @Test
    void forASandboxASilentAgentIsA502AndAGoneOneA503ToRetry() {
        ApiException silent = GuestAgentException.deadline("exec").forSandbox("sb", Duration.ofMillis(1500));
        assertEquals(502, silent.status());
        assertTrue(silent.getMessage().startsWith("the agent of sandbox sb did not answer within 1500 ms"), silent.getMessage());

        ApiException gone = GuestAgentException.peer("connection reset").forSandbox("sb", Duration.ofSeconds(1));
        assertEquals(503, gone.status());
        assertEquals(1, gone.retryAfterSeconds());

        GuestAgentException refused = GuestAgentException.missingFile("no /work/x");
        assertSame(refused, refused.forSandbox("sb", Duration.ofSeconds(1)), "what the agent refused passes on");
    }
}
