package io.vivarium.api;

import java.util.List;

/**
 * A sandbox's network (docs/network.md): {@value #NONE} (loopback only) or {@value #EGRESS}
 * (connections out to the addresses of {@code allow}, never to those of {@code deny}: deny wins).
 * Entries are IPv4 CIDRs with an optional port, {@code 198.51.100.0/24} or {@code 203.0.113.7/32:443}
 * (a bare address is its /32). Whatever the policy, a sandbox never reaches another sandbox, the
 * host or link-local addresses unless an entry names them. Since 2.5.
 *
 * @param mode {@value #NONE} or {@value #EGRESS}
 * @param allow where an {@value #EGRESS} sandbox may connect
 * @param deny where it may not, even inside {@code allow}
 */
public record NetworkPolicy(String mode, List<String> allow, List<String> deny) {
    public static final String NONE = "none";
    public static final String EGRESS = "egress";
    /** Loopback only: what a sandbox had before networks. */
    public static final NetworkPolicy ISOLATED = new NetworkPolicy(NONE, List.of(), List.of());

    /** {@code mode} is null only in a request that left it out, which core refuses with a 400. */
    public NetworkPolicy {
        allow = allow == null ? List.of() : List.copyOf(allow);
        deny = deny == null ? List.of() : List.copyOf(deny);
    }

    public boolean egress() {
        return EGRESS.equals(mode);
    }
}
