package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;

import org.junit.jupiter.api.Test;

class JsonCodecTest {
    private final JsonCodec json = new JsonCodec();

    private String rejection(String body) {
        ApiException e = assertThrows(ApiException.class,
                () -> json.read(body.getBytes(StandardCharsets.UTF_8), ExecRequest.class));
        assertEquals(400, e.status());
        return e.getMessage();
    }

    @Test
    void bindsSnakeCaseIntoRecords() {
        ExecRequest r = json.read("{\"args\":[\"ls\"],\"timeout_secs\":5,\"env\":{\"A\":\"1\"},\"max_output_bytes\":10}"
                .getBytes(StandardCharsets.UTF_8), ExecRequest.class);
        assertEquals(new ExecRequest(List.of("ls"), 5, Map.of("A", "1"), null, null, 10), r);
    }

    @Test
    void writesSnakeCaseAndOmitsNulls() {
        String out = new String(json.write(new ExecResult("o", "e", 0, false, true, 3)), StandardCharsets.UTF_8);
        assertEquals("{\"stdout\":\"o\",\"stderr\":\"e\",\"exit_code\":0,\"timed_out\":false,\"truncated\":true,\"duration_ms\":3}", out);
    }

    @Test
    void namesWhatIsWrong() {
        assertTrue(rejection("{\"args\":[\"ls\"],\"bogus\":1}").contains("unknown field \"bogus\""));
        assertTrue(rejection("{\"args\":[\"ls\"],\"timeout_secs\":\"30\"}").contains("\"timeout_secs\" has the wrong type: expected an integer"));
        assertTrue(rejection("{\"args\":[\"ls\"],\"timeout_secs\":1.5}").contains("timeout_secs"));
        assertTrue(rejection("{\"args\":\"ls\"}").contains("\"args\" has the wrong type: expected an array"));
        assertTrue(rejection("{\"args\":[\"ls\"]").startsWith("malformed JSON"));
        assertTrue(rejection("{\"args\":[\"ls\"").startsWith("malformed JSON"));
        assertTrue(rejection("[1,2]").contains("JSON object"));
        assertTrue(rejection("{\"args\":[\"ls\"]} trailing").length() > 0);
        assertTrue(rejection("{\"timeout_secs\":99999999999}").contains("out of range"));
        assertTrue(rejection("null").contains("JSON object"));
    }

    @Test
    void recordsThatGrewBindThroughTheirFullConstructor() {
        CreateSandboxRequest r = json.read("{\"backend\":\"qemu\",\"vcpus\":2,\"image\":\"debian-12\"}"
                .getBytes(StandardCharsets.UTF_8), CreateSandboxRequest.class);
        assertEquals(new CreateSandboxRequest("qemu", null, 2, "debian-12", null, null), r);
        assertEquals(new CreateSandboxRequest("procbox", 64), json.read("{\"backend\":\"procbox\",\"memory_limit_mib\":64}"
                .getBytes(StandardCharsets.UTF_8), CreateSandboxRequest.class));
        ApiException unknown = assertThrows(ApiException.class, () -> json.read("{\"snapshot_tag\":\"t\"}"
                .getBytes(StandardCharsets.UTF_8), CreateSandboxRequest.class));
        assertTrue(unknown.getMessage().contains("unknown field \"snapshot_tag\""), unknown.getMessage());
        String info = new String(json.write(new SandboxInfo("sb-1", "procbox", "t", "running", 1, 2, null, "/work", null)
                .withUsage(new ResourceUsage(4096L, 1.5, 0L))), StandardCharsets.UTF_8);
        assertTrue(info.contains("\"usage\":{\"resident_memory_bytes\":4096,\"cpu_seconds\":1.5,\"disk_bytes\":0}"), info);
        assertTrue(!info.contains("vcpus"), "absent fields stay absent: " + info);
    }
}
