package io.vivarium.backend.firecracker.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.kit.vmm.VmmApiClient;
import io.vivarium.kit.vmm.VmmApiException;
import io.vivarium.testkit.vmm.ApiDocument;
import io.vivarium.testkit.vmm.FakeVmm;
import io.vivarium.testkit.vmm.PrismFixtureSuite;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;

/** Firecracker's golden fixtures, judged again by Prism on its pinned document ({@link PrismFixtureSuite}). */
class FirecrackerPrismTest extends PrismFixtureSuite {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> SCENARIOS = List.of("boot", "snapshot", "load", "driver-boot", "driver-checkpoints",
            "driver-load");

    @Override
    protected ApiDocument document() {
        return FirecrackerRules.DOCUMENT;
    }

    @Override
    protected String serverPath() {
        return "";
    }

    @Override
    protected String fixtureDirectory() {
        return "/firecracker/" + FirecrackerApi.TARGET + "/";
    }

    @Override
    protected List<String> scenarios() {
        return SCENARIOS;
    }

    @Override
    protected FakeVmm.Received forbidden() {
        return new FakeVmm.Received("PUT", "/machine-config",
                JSON.createObjectNode().put("vcpu_count", "two").put("mem_size_mib", 512));
    }

    @Override
    protected int send(Path socket, String method, String path, JsonNode body) throws IOException {
        try (VmmApiClient client = new VmmApiClient("Firecracker", socket, "", JSON, Function.identity(),
                Duration.ofSeconds(10))) {
            client.send(method, path, body);
            return 204;
        } catch (VmmApiException e) {
            return e.status();
        }
    }
}
