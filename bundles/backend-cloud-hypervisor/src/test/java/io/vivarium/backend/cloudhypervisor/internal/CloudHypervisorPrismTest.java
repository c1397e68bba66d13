package io.vivarium.backend.cloudhypervisor.internal;

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

/** Cloud Hypervisor's golden fixtures, judged again by Prism on its pinned document ({@link PrismFixtureSuite}). */
class CloudHypervisorPrismTest extends PrismFixtureSuite {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> SCENARIOS = List.of("boot", "snapshot", "restore");

    @Override
    protected ApiDocument document() {
        return CloudHypervisorRules.DOCUMENT;
    }

    @Override
    protected String serverPath() {
        return "/api/v1";
    }

    @Override
    protected String fixtureDirectory() {
        return "/cloud-hypervisor/" + CloudHypervisorApi.TARGET + "/";
    }

    @Override
    protected List<String> scenarios() {
        return SCENARIOS;
    }

    @Override
    protected FakeVmm.Received forbidden() {
        return new FakeVmm.Received("PUT", "/api/v1/vm.restore",
                JSON.createObjectNode().put("source_url", 5));
    }

    @Override
    protected int send(Path socket, String method, String path, JsonNode body) throws IOException {
        try (VmmApiClient client = new VmmApiClient("Cloud Hypervisor", socket, "", JSON, Function.identity(),
                Duration.ofSeconds(10))) {
            client.send(method, path, body);
            return 204;
        } catch (VmmApiException e) {
            return e.status();
        }
    }
}
