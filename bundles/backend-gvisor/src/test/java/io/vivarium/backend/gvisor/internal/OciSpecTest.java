package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.vivarium.api.spi.AttachedVolume;
import io.vivarium.common.net.SavedPolicy;

class OciSpecTest {

    private final ContainerFiles files = ContainerFiles.of(Path.of("/state/sandboxes/s1"), Path.of("/tmp/links"), "s1");

    private static Map<String, JsonNode> mounts(ObjectNode spec) {
        Map<String, JsonNode> byDestination = new HashMap<>();
        spec.get("mounts").forEach(m -> byDestination.put(m.get("destination").asText(), m));
        return byDestination;
    }

    @Test
    void theAgentIsProcessOneOnItsSocketAsTheSandboxUserWithAReadOnlyRootAndNoNetwork() {
        ObjectNode spec = OciSpec.of("s1", Path.of("/images/rootfs"), false, Path.of("/data/agent"), files, 1234, 5678, null, List.of(), null);

        assertEquals("[\"/opt/vivarium/vivarium-agent\",\"--listen\",\"unix:/run/vivarium/agent.sock\",\"--user\",\"1234:5678\"]",
                spec.at("/process/args").toString());
        assertEquals("[\"CAP_SETUID\",\"CAP_SETGID\",\"CAP_SETPCAP\"]", spec.at("/process/capabilities/bounding").toString());
        assertTrue(spec.at("/process/noNewPrivileges").asBoolean());
        assertEquals("/images/rootfs", spec.at("/root/path").asText());
        assertTrue(spec.at("/root/readonly").asBoolean());
        assertTrue(spec.at("/linux/namespaces").toString().contains("\"network\""), "a network namespace of its own");
        assertTrue(spec.at("/linux/resources").isMissingNode(), "no memory limit unless asked");

        Map<String, JsonNode> mounts = mounts(spec);
        assertEquals("/state/sandboxes/s1/work", mounts.get("/work").get("source").asText());
        assertEquals("[\"rbind\",\"rw\"]", mounts.get("/work").get("options").toString());
        assertEquals("/state/sandboxes/s1/agent", mounts.get("/run/vivarium").get("source").asText());
        assertEquals("[\"rbind\",\"ro\"]", mounts.get("/opt/vivarium").get("options").toString());
        assertFalse(mounts.containsKey("/usr"), "a built root brings its own /usr");
    }

    @Test
    void aContainerWithANetworkJoinsItsNamedNamespaceAndResolvesThroughTheDaemonsResolverFileAndKeepsItsPolicy()
            throws Exception {
        SavedPolicy policy = new SavedPolicy(new io.vivarium.api.NetworkPolicy("egress",
                List.of("198.51.100.0/24", "203.0.113.7/32:443"), List.of("198.51.100.9/32")), "192.0.2.53");
        ObjectNode spec = OciSpec.of("s1", Path.of("/images/rootfs"), false, Path.of("/data/agent"), files, 1, 1, null, List.of(),
                new OciSpec.Network(Path.of("/run/netns/vsb0123456789ab"), Path.of("/data/agent-network/resolv.conf"), policy));

        assertEquals("{\"type\":\"network\",\"path\":\"/run/netns/vsb0123456789ab\"}", spec.at("/linux/namespaces/1").toString());
        assertEquals("/data/agent-network/resolv.conf", mounts(spec).get("/etc/resolv.conf").get("source").asText());
        assertEquals("[\"rbind\",\"ro\"]", mounts(spec).get("/etc/resolv.conf").get("options").toString());
        java.nio.file.Path config = java.nio.file.Files.createTempFile("config", ".json");
        try {
            java.nio.file.Files.write(config, OciSpec.bytes(spec));
            assertEquals(java.util.Optional.of(Path.of("/run/netns/vsb0123456789ab")), OciSpec.networkNamespace(config));
            assertEquals(java.util.Optional.of(policy), OciSpec.savedPolicy(config), "what a wake after a reboot makes again");
            java.nio.file.Files.write(config, OciSpec.bytes(OciSpec.of("s1", Path.of("/r"), false, Path.of("/a"), files, 1, 1,
                    null, List.of(), null)));
            assertEquals(java.util.Optional.empty(), OciSpec.networkNamespace(config), "no network: a namespace of its own, unnamed");
            assertEquals(java.util.Optional.empty(), OciSpec.savedPolicy(config));
        } finally {
            java.nio.file.Files.delete(config);
        }
    }

    @Test
    void theHostLayoutBindsUsrReadOnlyAndAMemoryLimitGoesToTheCgroup() {
        ObjectNode spec = OciSpec.of("s1", files.skeleton(), true, Path.of("/data/agent"), files, 65534, 65534, 300, List.of(), null);

        assertEquals("[\"rbind\",\"ro\"]", mounts(spec).get("/usr").get("options").toString());
        assertEquals(300L << 20, spec.at("/linux/resources/memory/limit").asLong());
    }

    @Test
    void volumesAreBoundAfterTheWorkspaceReadOnlyWhereAsked() {
        ObjectNode spec = OciSpec.of("s1", Path.of("/images/rootfs"), false, Path.of("/data/agent"), files, 1, 1, null,
                List.of(new AttachedVolume("data", Path.of("/state/volume-binds/s1/0"), "/work/data", false),
                        new AttachedVolume("ref", Path.of("/state/volume-binds/s1/1"), "/ref", true)), null);

        List<String> order = new java.util.ArrayList<>();
        spec.get("mounts").forEach(m -> order.add(m.get("destination").asText()));
        assertTrue(order.indexOf("/work/data") > order.indexOf("/work"), "a volume in the workspace is mounted after it");
        Map<String, JsonNode> mounts = mounts(spec);
        assertEquals("/state/volume-binds/s1/0", mounts.get("/work/data").get("source").asText());
        assertEquals("[\"rbind\",\"rw\"]", mounts.get("/work/data").get("options").toString());
        assertEquals("[\"rbind\",\"ro\"]", mounts.get("/ref").get("options").toString());
    }

    @Test
    void theRootfsSettingNamesADirectoryTheBuiltOneOrTheHosts() {
        assertEquals(Path.of("/srv/root"), GvisorSettings.rootfs("/srv/root", Map.of()).orElseThrow());
        assertEquals(Path.of("/imgs/gvisor-rootfs"), GvisorSettings.rootfs("", Map.of("VIVARIUM_IMAGES", "/imgs")).orElseThrow());
        assertTrue(GvisorSettings.rootfs("host", Map.of()).isEmpty());
    }

    @Test
    void aRecordReadsBackWhatItWrote() {
        ContainerRecord record = new ContainerRecord("vivarium-s1-0a0b0c0d", 4321, "98765", files, 65534, 65534);
        assertEquals(record, ContainerRecord.fromData(record.toData()));
        Map<String, String> partial = new HashMap<>(record.toData());
        partial.remove("starttime");
        try {
            ContainerRecord.fromData(partial);
            throw new AssertionError("a record without its start time was read");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("starttime"), expected.getMessage());
        }
    }
}
