package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import java.util.stream.StreamSupport;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code kill -9} of the daemon in the middle of a create, at two points (its record just written
 * as creating; the backend already at work in the sandbox's directory): after a restart nothing is
 * half-registered. The sandbox is either re-adopted and usable or gone with its directory and its
 * processes, and the sandbox made before the crash is re-adopted.
 */
class StateCrashIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path state;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    @ParameterizedTest(name = "killed when {0}")
    @ValueSource(strings = { "the record says creating", "the backend is at work" })
    void aKill9MidCreateLeavesTheSandboxEitherReadoptedOrCleanedAndNothingHalfRegistered(String point) throws Exception {
        Daemon first = daemons.start(state);
        Api api = new Api(first.baseUrl(), first.adminToken());
        String keeper = api.createSandbox();
        CompletableFuture<Api.Response> create = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post("/v1/sandboxes", Map.of());
            } catch (Exception cutShort) {
                return null;
            }
        });
        boolean backendAtWork = point.contains("backend");
        Path dir = await("a create to reach the point where " + point, () -> creating(keeper, backendAtWork));
        first.kill9();
        Bounded.get(create, Duration.ofSeconds(60), "the create's request ends once its daemon is killed");
        String id = dir.getFileName().toString();

        Daemon second = daemons.start(state);
        Api again = new Api(second.baseUrl(), second.adminToken());
        assertEquals("running", again.get("/v1/sandboxes/" + keeper).body().get("status").asText(), "re-adopted");
        Api.Response cut = again.get("/v1/sandboxes/" + id);
        System.out.println("killed when " + point + ": sandbox " + id + (cut.status() == 200 ? " re-adopted" : " cleaned"));
        if (cut.status() == 200) {
            assertEquals("running", cut.body().get("status").asText(), "finished before the kill, then re-adopted: " + cut.body());
            assertEquals("hi\n", again.exec(id, "echo", "hi").get("stdout").asText());
        } else {
            assertEquals(404, cut.status(), cut.body().toString());
            List<String> ids = new ArrayList<>();
            again.get("/v1/sandboxes").body().forEach(s -> ids.add(s.get("id").asText()));
            assertEquals(List.of(keeper), ids);
            await("the cut-short sandbox's directory and processes to be gone",
                    () -> Files.exists(dir) || !processesUnder(dir).isEmpty() ? Optional.empty() : Optional.of(dir));
        }
        assertFalse(Files.exists(state.resolve("store/journal.json")), "no transaction left pending");

        assertEquals(204, again.delete("/v1/sandboxes/" + keeper).status());
        if (cut.status() == 200) {
            assertEquals(204, again.delete("/v1/sandboxes/" + id).status());
        }
        assertEquals(List.of(), StateDirLeftovers.processes(state));
    }

    /** The directory of a sandbox other than {@code keeper} whose record still says creating, once it is at the point. */
    private Optional<Path> creating(String keeper, boolean backendAtWork) {
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(state.resolve("sandboxes"), Files::isDirectory)) {
            for (Path d : dirs) {
                if (d.getFileName().toString().equals(keeper) || !isCreating(d.resolve("sandbox.json"))) {
                    continue;
                }
                if (!backendAtWork || entries(d) > 1) {
                    return Optional.of(d);
                }
            }
        } catch (IOException raced) {
            // a directory came or went while listing: look again
        }
        return Optional.empty();
    }

    private static boolean isCreating(Path record) {
        try {
            JsonNode r = JSON.readTree(record.toFile());
            return "creating".equals(r.path("body").path("phase").asText(r.path("phase").asText()));
        } catch (IOException notYet) {
            return false;
        }
    }

    private static long entries(Path dir) throws IOException {
        try (DirectoryStream<Path> in = Files.newDirectoryStream(dir, p -> !p.getFileName().toString().startsWith("."))) {
            return StreamSupport.stream(in.spliterator(), false).count();
        }
    }

    private static List<ProcessHandle> processesUnder(Path dir) {
        String prefix = dir.toAbsolutePath() + "/";
        return ProcessHandle.allProcesses().filter(p -> HostProcesses.cmdline(p.pid()).contains(prefix)).toList();
    }

    private static <T> T await(String what, Supplier<Optional<T>> condition) throws InterruptedException {
        Instant deadline = Instant.now().plus(Duration.ofSeconds(60));
        while (Instant.now().isBefore(deadline)) {
            Optional<T> found = condition.get();
            if (found.isPresent()) {
                return found.get();
            }
            Thread.sleep(2);
        }
        throw new AssertionError("timed out waiting for " + what);
    }
}
