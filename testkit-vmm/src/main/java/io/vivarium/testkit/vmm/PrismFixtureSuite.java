package io.vivarium.testkit.vmm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

/**
 * A VMM backend's golden request fixtures (which its contract tests prove to be what it sends) sent
 * again, through the backend's own API client on a Unix socket ({@link #send}), to {@link PrismMock}
 * serving the same pinned document: every one must be answered 2xx, and a request the document forbids must
 * not be, so the mock is seen to judge. Skipped, saying how to get it, where no {@code prism} is
 * installed ({@code .ci/run} installs it).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class PrismFixtureSuite {
    private Path dir;
    private PrismMock prism;
    private Path socket;

    /** The document the backend's API client targets, as pinned. */
    protected abstract ApiDocument document();

    /** The document's server path its requests carry (e.g. {@code /api/v1}), or empty. */
    protected abstract String serverPath();

    /** The class path directory of the golden fixtures of the version targeted, e.g. {@code /firecracker/1.17.0-dev/}. */
    protected abstract String fixtureDirectory();

    /** The names of the golden fixtures in it, e.g. {@code boot} for {@code boot.json}. */
    protected abstract List<String> scenarios();

    /** A request the document forbids (a value of the wrong type), as method, path and body. */
    protected abstract FakeVmm.Received forbidden();

    /** Sends {@code method path body} (body null for none) through the backend's API client on {@code socket}; its status. */
    protected abstract int send(Path socket, String method, String path, JsonNode body) throws IOException;

    @BeforeAll
    void startPrism() throws Exception {
        Assumptions.assumeTrue(PrismMock.executable().isPresent(),
                "no prism on the PATH: npm install -g @stoplight/prism-cli@5 (.ci/run installs it)");
        dir = Files.createTempDirectory("prism");
        socket = dir.resolve("api.sock");
        prism = new PrismMock(document(), dir, socket, serverPath());
    }

    @AfterAll
    void stopPrism() throws Exception {
        if (prism != null) {
            prism.close();
        }
        if (dir != null) {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @TestFactory
    Stream<DynamicTest> everyFixtureRequestIsOneTheDocumentAllows() throws IOException {
        List<DynamicTest> checks = new ArrayList<>();
        Map<String, List<JsonNode>> fixtures = new LinkedHashMap<>();
        for (String scenario : scenarios()) {
            fixtures.put(scenario, FakeVmm.fixture(getClass(), fixtureDirectory() + scenario + ".json", dir));
        }
        fixtures.forEach((scenario, requests) -> requests.forEach(r -> checks.add(DynamicTest.dynamicTest(
                scenario + ": " + r.get("method").asText() + " " + r.get("path").asText(),
                () -> assertEquals(2, send(socket, r.get("method").asText(), r.get("path").asText(),
                        r.path("body").isNull() || r.path("body").isMissingNode() ? null : r.get("body")) / 100,
                        "Prism allows it")))));
        assertFalse(checks.isEmpty(), "the backend has golden fixtures");
        return checks.stream();
    }

    @Test
    void aRequestTheDocumentForbidsIsRefused() throws IOException {
        FakeVmm.Received bad = forbidden();
        assertEquals(4, send(socket, bad.method(), bad.path(), bad.body()) / 100, "Prism judges what it is sent");
    }
}
