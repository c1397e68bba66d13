package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

class NodePullConfigTest {

    private static Map<String, String> pull() {
        Map<String, String> p = new HashMap<>();
        p.put("vivarium.node.master.url", "https://master.example.test:8889/");
        p.put("vivarium.node.id", "f3");
        p.put("vivarium.node.secret.file", "/s/pki/node/pairing-secret");
        p.put("vivarium.node.self.url", "https://127.0.0.1:9443");
        return p;
    }

    @Test
    void aNodeWithoutAMasterUrlListens() {
        assertTrue(NodePullConfig.from(Map.<String, String>of()::get).isEmpty());
        assertTrue(NodePullConfig.from(Map.of("vivarium.node.id", "f3", "vivarium.node.master.url", " ")::get).isEmpty());
    }

    @Test
    void theLaunchersPropertiesMakeAPullConfig() {
        Map<String, String> p = pull();
        p.put("vivarium.node.registration.token", "tok");
        p.put("vivarium.node.master.ca", "/etc/master-ca.pem");
        p.put("vivarium.node.hold.secs", "20");
        NodePullConfig c = NodePullConfig.from(p::get).orElseThrow();
        assertEquals(URI.create("https://master.example.test:8889"), c.masterUrl(), "without the trailing slash");
        assertEquals(URI.create("https://master.example.test:8889/v1/node/poll?hold_secs=20"), c.master("/v1/node/poll?hold_secs=20"));
        assertEquals("tok", c.registrationToken());
        assertEquals(Path.of("/etc/master-ca.pem"), c.masterCa());
        assertEquals(20, c.holdSecs());
        assertEquals("f3", c.nodeId());
        assertEquals("https://127.0.0.1:9443", c.selfUrl());
        assertEquals(Path.of("/s/pki/node/master-credential"), c.credentialFile(), "beside the pairing secret");
        assertEquals(Path.of("/s/pki/node/cert.pem"), c.certFile());
        assertFalse(c.masterInClear());
    }

    @Test
    void theDefaultsAndAMasterUnderAPath() {
        Map<String, String> p = pull();
        p.put("vivarium.node.master.url", "http://10.0.0.1/fleet");
        NodePullConfig c = NodePullConfig.from(p::get).orElseThrow();
        assertEquals(5, c.holdSecs());
        assertNull(c.registrationToken(), "a node with its credential needs no token");
        assertNull(c.masterCa(), "the JDK's default trust");
        assertTrue(c.masterInClear());
        assertEquals(URI.create("http://10.0.0.1/fleet/v1/node/register"), c.master("/v1/node/register"));
    }

    @Test
    void whatIsMissingOrMalformedIsNamed() {
        Map<String, String> expected = new java.util.LinkedHashMap<>();
        expected.put("vivarium.node.master.url=ftp://m", "expected http://HOST[:PORT] or https://HOST[:PORT]");
        expected.put("vivarium.node.master.url=master:8889", "expected http://HOST[:PORT]");
        expected.put("vivarium.node.master.url=https://m/?a=b", "has a query or fragment");
        expected.put("vivarium.node.master.url=https://m /", "is not a URL");
        expected.put("vivarium.node.hold.secs=0", "expected seconds from 1 to 60");
        expected.put("vivarium.node.hold.secs=61", "expected seconds from 1 to 60");
        expected.put("vivarium.node.hold.secs=x", "expected seconds from 1 to 60");
        expected.put("vivarium.node.self.url=http://127.0.0.1:80", "the node's own API is HTTPS");
        expected.put("vivarium.node.self.url=", "needs vivarium.node.self.url");
        expected.put("vivarium.node.id=", "needs vivarium.node.id");
        expected.put("vivarium.node.secret.file=", "needs vivarium.node.secret.file");
        expected.forEach((change, message) -> {
            Map<String, String> p = pull();
            String[] kv = change.split("=", 2);
            p.put(kv[0], kv[1]);
            String m = assertThrows(IllegalArgumentException.class, () -> NodePullConfig.from(p::get), change).getMessage();
            assertTrue(m.contains(message), change + ": " + m);
        });
    }
}
