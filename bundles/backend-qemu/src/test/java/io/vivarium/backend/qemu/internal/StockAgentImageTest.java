package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.kit.guest.AgentCapabilities;
import io.vivarium.kit.guest.AgentCapabilities.Feature;
import io.vivarium.kit.guest.AgentCapabilities.Support;
import io.vivarium.kit.guest.Deadline;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A guest whose agent is Debian's stock qemu-ga boots under the same backend, in one boot. */
class StockAgentImageTest {

    @TempDir
    Path state;

    @Test
    void execPingAndFilesWorkAndWhatItLacksIsReported() throws Exception {
        QemuHost.assumeImage("qemu-ga");
        QemuHost.Revision backend = QemuHost.revision(QemuHost.settings());
        InstanceSpec spec = new InstanceSpec("stock-" + ProcessHandle.current().pid(), Files.createDirectories(
                state.resolve("stock")), 256, 1, "qemu-ga", null, null);
        try {
            QemuInstance vm = backend.create(spec);
            assertTrue(vm.channel().ping().pong());

            ExecResult r = vm.channel().exec(new ExecRequest(List.of("/bin/sh", "-c", "echo out; echo err >&2; exit 3"),
                    30, Map.of("PATH", "/usr/bin:/bin"), "/work", null, 1 << 20));
            assertEquals(new ExecResult("out\n", "err\n", 3, false, false, r.durationMs()), r);

            byte[] content = "written through qemu-ga\n".getBytes(StandardCharsets.UTF_8);
            vm.channel().writeFile("/work/stock.txt", content);
            assertArrayEquals(content, vm.channel().readFile("/work/stock.txt", 1 << 20));

            AgentCapabilities capabilities = vm.agent().capabilities(Deadline.after(Duration.ofSeconds(10)));
            assertFalse(capabilities.peer().vivariumAgent(), capabilities.peer().version());
            assertEquals(Support.EMULATED, capabilities.support(Feature.EXEC_TIMEOUT));
            assertEquals(Support.MISSING, capabilities.support(Feature.EXEC_USER));
            assertEquals(Support.MISSING, capabilities.support(Feature.EVAL));
            ApiException asUser = assertThrows(ApiException.class, () -> vm.channel().exec(new ExecRequest(
                    List.of("/bin/true"), 30, Map.of(), "/work", null, 1024), "1000"));
            assertEquals(501, asUser.status());
        } finally {
            backend.backend().destroy(spec, new InstanceState(0, Map.of()));
            backend.close();
        }
    }
}
