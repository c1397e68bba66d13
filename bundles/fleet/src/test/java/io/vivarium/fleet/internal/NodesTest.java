package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.state.StateStore;
import io.vivarium.common.state.FileStateStore;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Nodes that dial in: a token registers once, a host unlike its pool's splits it, a revoked node's credential is refused. */
class NodesTest {
    @TempDir
    Path dir;

    private static NodeHello hello(String id, String kernel) {
        return new NodeHello(id, "0.1.0", new HostFingerprint("0.1.0", Map.of("procbox", "0.1.0"), kernel, "AuthenticAMD", "EPYC",
                "sse2"), 10, 0, 1024);
    }

    @Test
    void aRegistrationTokenIsUsedOnceAndAHostUnlikeItsPoolsJoinsASplitOfIt() throws Exception {
        try (StateStore store = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            List<String> connected = new ArrayList<>();
            Nodes nodes = new Nodes(store, SecretBox.in(dir), connected::add, () -> { });
            Registrations registrations = new Registrations(store);

            String first = registrations.issue(new Registrations.IssueRequest("gpu", 60L)).token();
            String key = Registrations.key(first);
            PullWire.Registered a = nodes.register(registrations, key, new PullWire.RegisterRequest("a", hello("a", "6.1")));
            assertEquals("gpu", a.pool());
            assertEquals(64, a.credential().length());
            ApiException used = assertThrows(ApiException.class,
                    () -> nodes.register(registrations, key, new PullWire.RegisterRequest("x", hello("x", "6.1"))));
            assertEquals(401, used.status());
            assertTrue(registrations.valid(first).isEmpty(), "a used token is no token");

            PullWire.Registered b = nodes.register(registrations, Registrations.key(registrations.issue(
                    new Registrations.IssueRequest("gpu", 60L)).token()), new PullWire.RegisterRequest("b", hello("b", "6.12")));
            assertEquals("gpu#" + hello("b", "6.12").fingerprint().fp8(), b.pool(), "another kernel: a pool of its own");
            PullWire.Registered c = nodes.register(registrations, Registrations.key(registrations.issue(
                    new Registrations.IssueRequest("gpu", 60L)).token()), new PullWire.RegisterRequest("c", hello("c", "6.1")));
            assertEquals("gpu", c.pool(), "the same host as the pool's first node");

            assertEquals("a", nodes.polling(a.credential()).orElseThrow());
            nodes.pollEnded(nodes.pollStarted("a", hello("a", "6.1")));
            assertEquals(List.of("a"), connected, "its first poll connects it, and it is reconciled");
            nodes.revoke("a");
            assertFalse(nodes.polling(a.credential()).isPresent(), "a revoked node's credential is refused");
            assertEquals(503, assertThrows(ApiException.class, () -> nodes.link("a")).status());

            String any = Registrations.key(registrations.issue(new Registrations.IssueRequest(null, 60L)).token());
            ApiException taken = assertThrows(ApiException.class,
                    () -> nodes.register(registrations, any, new PullWire.RegisterRequest("a", hello("a", "6.1"))));
            assertEquals(409, taken.status(), "a token not issued for node a cannot take its record over");
            String forA = Registrations.key(registrations.issue(new Registrations.IssueRequest(null, 60L, "a")).token());
            PullWire.Registered again = nodes.register(registrations, forA, new PullWire.RegisterRequest("a", hello("a", "6.1")));
            assertTrue(nodes.polling(again.credential()).isPresent(), "a token issued for it registers it again, lifting the revocation");
            assertFalse(nodes.polling(a.credential()).isPresent(), "with a new credential");
        }
    }

    @Test
    void childrenAreSpreadOneByOneToTheNodeWithTheSmallestShareInUseWithinTheRoomEachHas() throws Exception {
        try (StateStore store = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            Nodes nodes = new Nodes(store, SecretBox.in(dir), id -> { }, () -> { });
            Registrations registrations = new Registrations(store);
            Map<String, NodeHello> hellos = Map.of("a", load(hello("a", "6.1"), 0, 10), "b", load(hello("b", "6.1"), 4, 10),
                    "c", load(hello("c", "6.1"), 0, 4));
            for (NodeHello h : hellos.values()) {
                nodes.register(registrations, Registrations.key(registrations.issue(new Registrations.IssueRequest(null, 60L))
                        .token()), new PullWire.RegisterRequest(h.nodeId(), h));
                nodes.pollEnded(nodes.pollStarted(h.nodeId(), h));
            }

            assertEquals(Map.of("a", 4, "c", 2), nodes.spread(id -> true, 6, Map.of(), ""),
                    "a 0/10, b 4/10, c 0/4: a, c, a, a, c, a");
            assertEquals(Map.of("b", 1), nodes.spread(id -> true, 1, Map.of("a", 5, "c", 3), ""),
                    "children already headed for a node count");
            assertEquals(Map.of("a", 10, "b", 6, "c", 4), nodes.spread(id -> true, 20, Map.of(), ""), "every node filled to its maximum");
            ApiException full = assertThrows(ApiException.class, () -> nodes.spread(id -> !id.equals("a"), 11, Map.of(), " of the test"));
            assertEquals(503, full.status());
            assertTrue(full.getMessage().contains("no connected node of the test has room for 11 more sandboxes"), full.getMessage());
            assertEquals("a", nodes.pick());
        }
    }

    private static NodeHello load(NodeHello h, int sandboxes, int max) {
        return new NodeHello(h.nodeId(), h.version(), h.fingerprint(), max, sandboxes, h.memAvailableMib());
    }

    @Test
    void aTokenAskedForBadlyIs400() throws Exception {
        try (StateStore store = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            Registrations registrations = new Registrations(store);
            assertEquals(400, assertThrows(ApiException.class,
                    () -> registrations.issue(new Registrations.IssueRequest("no spaces", null))).status());
            assertEquals(400, assertThrows(ApiException.class,
                    () -> registrations.issue(new Registrations.IssueRequest(null, 0L))).status());
        }
    }
}
