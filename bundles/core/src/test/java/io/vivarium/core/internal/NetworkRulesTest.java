package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.NetworkPolicy;

import org.junit.jupiter.api.Test;

class NetworkRulesTest {
    private static final List<String> CAN = List.of(Capability.EXEC, Capability.NETWORK_EGRESS);
    private final NetworkRules rules = NetworkRules.of("none", "198.51.100.0/24, 203.0.113.7:443", "192.0.2.53");

    private static NetworkPolicy egress(List<String> allow, List<String> deny) {
        return new NetworkPolicy(NetworkPolicy.EGRESS, allow, deny);
    }

    @Test
    void aPolicyInsideTheOperatorsIsKeptInCanonicalForm() {
        NetworkPolicy p = rules.resolve(egress(List.of("198.51.100.9/24", "203.0.113.7/32:443"), List.of("198.51.100.9")),
                "procbox", CAN);
        assertEquals(egress(List.of("198.51.100.0/24", "203.0.113.7/32:443"), List.of("198.51.100.9/32")), p);
        assertEquals("192.0.2.53", rules.resolver());
        assertEquals(NetworkPolicy.ISOLATED, rules.resolve(null, "procbox", CAN), "the operator's default is none");
        assertEquals(egress(List.of("198.51.100.0/24", "203.0.113.7/32:443"), List.of()),
                NetworkRules.of("egress", "198.51.100.0/24,203.0.113.7:443", null).resolve(null, "procbox", CAN),
                "a default of egress allows what the operator allows");
    }

    @Test
    void moreThanTheOperatorAllowsIs403NamingTheEntryAndTheSetting() {
        for (String wider : List.of("198.51.0.0/16", "203.0.113.7", "203.0.113.7:80", "0.0.0.0/0", "169.254.169.254")) {
            ApiException e = assertThrows(ApiException.class, () -> rules.resolve(egress(List.of(wider), List.of()), "procbox", CAN));
            assertEquals(403, e.status(), wider);
            assertTrue(e.getMessage().contains("network_allow") && e.getMessage().contains("network.allow entry"), e.getMessage());
        }
        ApiException none = assertThrows(ApiException.class,
                () -> NetworkRules.of(null, null, null).resolve(egress(List.of("198.51.100.1"), List.of()), "procbox", CAN));
        assertTrue(none.getMessage().contains("no egress at all"), none.getMessage());
    }

    @Test
    void badInputIs400() {
        for (NetworkPolicy bad : List.of(new NetworkPolicy("bridge", List.of(), List.of()), egress(List.of("1.2.3.4/33"), List.of()),
                egress(List.of(), List.of("::1")), new NetworkPolicy("none", List.of("198.51.100.0/24"), List.of()))) {
            assertEquals(400, assertThrows(ApiException.class, () -> rules.resolve(bad, "procbox", CAN)).status(), bad.toString());
        }
        ApiException cannot = assertThrows(ApiException.class,
                () -> rules.resolve(egress(List.of("198.51.100.0/24"), List.of()), "vmbox", List.of(Capability.EXEC)));
        assertTrue(cannot.getMessage().contains("cannot give its sandboxes a network"), cannot.getMessage());
    }

    @Test
    void wrongOperatorSettingsSayWhich() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> NetworkRules.of("open", "", ""))
                .getMessage().contains("network_default"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> NetworkRules.of("none", "10.0.0.0/8,x", ""))
                .getMessage().contains("network_allow"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> NetworkRules.of("none", "", "10.0.0.0/8"))
                .getMessage().contains("network_resolver"));
    }
}
