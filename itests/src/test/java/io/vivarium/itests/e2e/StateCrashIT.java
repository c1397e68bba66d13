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
 * The daemon stopped as abruptly as by {@code kill -9} in the middle of a create, at two of core's
 * test points (TestPoints: {@code create.recorded}, its record just written as creating;
 * {@code create.made}, the backend's sandbox made and the record still creating): after a restart
 * nothing is half-registered: the cut-short sandbox, whose create never answered, is gone with its
 * directory and its processes, and the sandbox made before the crash is re-adopted.
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

    @ParameterizedTest(name = "halted at {0}")
    @ValueSource(strings = { "create.recorded", "create.made" })
    void aKill9MidCreateLeavesTheSandboxEitherReadoptedOrCleanedAndNothingHalfRegistered(String point) throws Exception {
        // #2: the keeper's create passes the point first
        Daemon first = daemons.start(state, List.of(), List.of("-Dvivarium.test.halt.at=" + point + "#2"));
        Api api = new Api(first.baseUrl(), first.adminToken());
        String keeper = api.createSandbox();
        CompletableFuture<Api.Response> create = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post("/v1/sandboxes", Map.of());
            } catch (Exception cutShort) {
                return null;
            }
        });
        assertTrue(first.awaitExit(Duration.ofSeconds(120)), "the daemon did not reach " + point + " in the second create");
        Bounded.get(create, Duration.ofSeconds(60), "the create's request ends once its daemon is gone");
        Path dir = cutShort(keeper);
        String id = dir.getFileName().toString();
        assertTrue(isCreating(dir.resolve("sandbox.json")), "the record of " + id + " says creating at " + point);
        if (point.equals("create.made")) {
            assertTrue(entries(dir) > 1, "the backend was at work in " + dir + " when the daemon halted");
        }

        Daemon second = daemons.start(state);
        Api again = new Api(second.baseUrl(), second.adminToken());
        assertEquals("running", again.get("/v1/sandboxes/" + keeper).body().get("status").asText(), "re-adopted");
        Api.Response cut = again.get("/v1/sandboxes/" + id);
        assertEquals(404, cut.status(), "a create that never answered is undone at start-up, not adopted: " + cut.body());
        List<String> ids = new ArrayList<>();
        again.get("/v1/sandboxes").body().forEach(s -> ids.add(s.get("id").asText()));
        assertEquals(List.of(keeper), ids);
        await("the cut-short sandbox's directory and processes to be gone",
                () -> Files.exists(dir) || !processesUnder(dir).isEmpty() ? Optional.empty() : Optional.of(dir));
        assertFalse(Files.exists(state.resolve("store/journal.json")), "no transaction left pending");

        assertEquals(204, again.delete("/v1/sandboxes/" + keeper).status());
        assertEquals(List.of(), StateDirLeftovers.processes(state));
    }

    /** The directory of the one sandbox besides {@code keeper}: the create cut short. */
    private Path cutShort(String keeper) throws IOException {
        List<Path> others = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(state.resolve("sandboxes"), Files::isDirectory)) {
            dirs.forEach(d -> {
                if (!d.getFileName().toString().equals(keeper)) {
                    others.add(d);
                }
            });
        }
        assertEquals(1, others.size(), "one sandbox directory besides the keeper's: " + others);
        return others.get(0);
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
