package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vivarium.api.ExecRequest;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class ExecSpecTest {

    @Test
    void anApiRequestMapsOneToOne() {
        ExecSpec spec = ExecSpec.from(new ExecRequest(List.of("ls", "-l"), 30, Map.of("PATH", "/bin"), "/work", "in",
                4096));
        assertEquals(List.of("ls", "-l"), spec.argv());
        assertEquals(Duration.ofSeconds(30), spec.timeout());
        assertEquals("/work", spec.cwd());
        assertArrayEquals("in".getBytes(StandardCharsets.UTF_8), spec.stdin());
        assertEquals(4096, spec.maxOutputBytes());
    }

    @Test
    void whatAnAgentCouldMisreadIsRefusedBeforeItIsSent() {
        assertThrows(IllegalArgumentException.class, () -> ExecSpec.of());
        assertThrows(IllegalArgumentException.class, () -> ExecSpec.of("a\0b"));
        assertThrows(IllegalArgumentException.class, () -> ExecSpec.of("true").withEnv(Map.of("A=B", "c")));
        assertThrows(IllegalArgumentException.class, () -> ExecSpec.of("true").withEnv(Map.of("", "c")));
        assertThrows(IllegalArgumentException.class, () -> ExecSpec.of("true").withCwd("relative"));
        assertThrows(IllegalArgumentException.class, () -> ExecSpec.of("true").withTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class,
                () -> ExecSpec.of("true").withMaxOutputBytes(ExecSpec.MAX_OUTPUT_BYTES + 1));
        assertThrows(IllegalArgumentException.class, () -> ExecSpec.of("true").withUser(-1, 0));
    }

    @Test
    void aSignalIsReportedAsTheShellDoes() {
        GuestExecResult killed = new GuestExecResult(new byte[0], new byte[0], null, 15, false, false, false,
                Duration.ofMillis(3));
        assertEquals(143, killed.toExecResult().exitCode());
    }
}
