package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.OciTestImages;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A daemon killed ({@code kill -9}) while a template's setup snapshot is being written (held at
 * core's test point {@code build.staged}, the capture staged and not yet published): the next daemon
 * removes the half snapshot and its builder sandbox, builds the template again, setup included, and
 * its sandboxes start from the new snapshot; nothing of the first try is left (docs/templates.md, "Setup").
 */
class TemplateSetupCrashIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final Duration PATIENCE = Duration.ofSeconds(120);
    private static final String FEATURES = "core,api-v1,procbox,images-oci,fingerprint-sha256,storage-reflink";

    @TempDir
    Path dir;

    @Test
    void aDaemonKilledWhileTheSetupSnapshotIsWrittenBuildsTheTemplateAgainAtItsNextStart() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(OciTestImages.missingTools() == null, OciTestImages.missingTools());
        String layout = OciTestImages.layout(dir.resolve("layout"));
        Path state = dir.resolve("state");
        Path tokens = Files.writeString(dir.resolve("tokens.txt"), "the-operator ops operator\nalice-admin alice admin\n");
        List<String> args = List.of("--token-file", tokens.toString(), "--features", FEATURES);
        Daemon first = daemons.start(state, args, List.of("-Dvivarium.test.hold.at=build.staged#1:" + dir.resolve("never")));
        Api operator = new Api(first.baseUrl(), "the-operator");
        Api.Response posted = operator.post("/v1/templates", Map.of("name", "set-up", "backend", "procbox", "image", layout,
                "setup", List.of("sh", "-c", "cat /proc/sys/kernel/random/uuid > /work/once")));
        assertEquals(202, posted.status(), posted.raw().body());
        first.awaitOutput("holding at test point build.staged#1", PATIENCE);
        first.kill9();

        Daemon second = daemons.start(state, args);
        Api ops = new Api(second.baseUrl(), "the-operator");
        Bounded.until(PATIENCE, "the template is built again", () -> {
            try {
                return !Api.expect(200, ops.get("/v1/templates/set-up")).get("state").asText().equals("building");
            } catch (Exception e) {
                return false;
            }
        });
        assertEquals("ready", Api.expect(200, ops.get("/v1/templates/set-up")).get("state").asText());
        Api alice = ops.as("alice-admin");
        String sb = Api.expect(201, alice.post("/v1/sandboxes", Map.of("template", "set-up"))).get("id").asText();
        assertTrue(Api.sh(alice, sb, "cat /work/once").strip().matches("[0-9a-f-]{36}"), "the setup ran again");

        try (Stream<Path> sandboxes = Files.list(state.resolve("sandboxes"))) {
            assertEquals(List.of(state.resolve("sandboxes").resolve(sb)), sandboxes.toList(),
                    "the first try's builder sandbox is gone; only the sandbox made from the template is left");
        }
        // the daemon's tenant, as core names a tenant's directory that is not a plain name
        Path daemonsOwn = state.resolve("snapshots").resolve("%" + HexFormat.of().formatHex("_templates".getBytes(
                StandardCharsets.UTF_8)));
        try (Stream<Path> setups = Files.list(daemonsOwn)) {
            assertEquals(List.of(daemonsOwn.resolve("set-up")), setups.toList(),
                    "one setup snapshot, whole (no staging of the first try)");
        }
        Api.expect(204, alice.delete("/v1/sandboxes/" + sb));
        Api.expect(204, ops.delete("/v1/templates/set-up"));
        Bounded.until(Duration.ofSeconds(30), "the setup snapshot goes with its template",
                () -> !Files.exists(daemonsOwn.resolve("set-up")));
    }
}
