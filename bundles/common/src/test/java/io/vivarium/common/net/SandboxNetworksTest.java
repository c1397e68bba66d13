package io.vivarium.common.net;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import io.vivarium.api.NetworkPolicy;

import org.junit.jupiter.api.Test;

class SandboxNetworksTest {
    @Test
    void aSandboxsChainTakesTheResolverThenDeniesThenWhatItNamesOutrightThenTheProtectedRangesThenTheRest() {
        String chain = SandboxNetworks.chain("0123456789ab", new NetworkPolicy(NetworkPolicy.EGRESS,
                List.of("198.51.100.0/24", "169.254.169.254/32:80"), List.of("198.51.100.9/32")), "192.0.2.53");
        String r = "add rule inet vivarium sb_0123456789ab ";
        assertEquals("add chain inet vivarium sb_0123456789ab\nflush chain inet vivarium sb_0123456789ab\n"
                + r + "ip daddr 192.0.2.53 meta l4proto { tcp, udp } th dport 53 accept\n"
                + r + "ip daddr 198.51.100.9/32 drop\n"
                + r + "ip daddr 169.254.169.254/32 meta l4proto { tcp, udp } th dport 80 accept\n"
                + r + "ip daddr 10.213.0.0/16 drop\n"
                + r + "ip daddr 127.0.0.0/8 drop\n"
                + r + "ip daddr 169.254.0.0/16 drop\n"
                + r + "ip daddr 224.0.0.0/4 drop\n"
                + r + "ip daddr 198.51.100.0/24 accept\n"
                + r + "drop\n"
                + "add element inet vivarium sandboxes { \"vsb0123456789ab\" : jump sb_0123456789ab }\n", chain);
        String name = SandboxNetworks.interfaceOf("sb-30b3238c7c46");
        assertEquals(15, name.length(), "the most an interface name has: " + name);
        assertEquals("vsb" + SandboxNetworks.hex("sb-30b3238c7c46"), name);
        assertEquals(SandboxNetworks.hex("any-id"), SandboxNetworks.hex("any-id"), "the same id, the same name");
    }
}
