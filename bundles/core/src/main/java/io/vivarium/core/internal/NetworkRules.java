package io.vivarium.core.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.NetworkPolicy;
import io.vivarium.common.net.NetworkEntry;

/**
 * The operator's network policy (docs/network.md): the mode a sandbox gets when its create names
 * none, the addresses clients may allow at most ({@code network_allow}: a client's allow entry must
 * lie inside one of them), and the resolver {@code egress} sandboxes resolve names through. A
 * client's policy is checked once, here: malformed is a 400, more than the operator allows a 403
 * naming the entry and the setting.
 */
final class NetworkRules {
    static final NetworkRules NONE = new NetworkRules(NetworkPolicy.NONE, List.of(), null);
    private static final int MAX_ENTRIES = 64;

    private final String defaultMode;
    private final List<NetworkEntry> ceiling;
    private final String resolver;

    private NetworkRules(String defaultMode, List<NetworkEntry> ceiling, String resolver) {
        this.defaultMode = defaultMode;
        this.ceiling = List.copyOf(ceiling);
        this.resolver = resolver;
    }

    /** The operator's settings; throws IllegalArgumentException saying which is wrong. */
    static NetworkRules of(String defaultMode, String allow, String resolver) {
        String mode = defaultMode == null || defaultMode.isBlank() ? NetworkPolicy.NONE : defaultMode.strip();
        if (!mode.equals(NetworkPolicy.NONE) && !mode.equals(NetworkPolicy.EGRESS)) {
            throw new IllegalArgumentException("network_default must be none or egress, not \"" + mode + "\"");
        }
        List<NetworkEntry> ceiling = new ArrayList<>();
        for (String entry : allow == null ? new String[0] : allow.split(",")) {
            if (!entry.isBlank()) {
                ceiling.add(parse("network_allow", entry));
            }
        }
        String dns = resolver == null || resolver.isBlank() ? null : resolver.strip();
        if (dns != null) {
            NetworkEntry r = parse("network_resolver", dns);
            if (r.prefix() != 32 || r.port() != null) {
                throw new IllegalArgumentException("network_resolver must be one IPv4 address, not \"" + dns + "\"");
            }
            dns = NetworkEntry.address(r.network());
        }
        return new NetworkRules(mode, ceiling, dns);
    }

    private static NetworkEntry parse(String setting, String entry) {
        try {
            return NetworkEntry.parse(entry);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(setting + ": " + e.getMessage());
        }
    }

    String resolver() {
        return resolver;
    }

    /**
     * The policy a sandbox of {@code backend} gets for {@code asked} (null: the operator's default,
     * whose allow list is {@code network_allow}), its entries in canonical form.
     */
    NetworkPolicy resolve(NetworkPolicy asked, String backend, List<String> caps) {
        NetworkPolicy policy = asked != null ? asked
                : defaultMode.equals(NetworkPolicy.EGRESS)
                        ? new NetworkPolicy(NetworkPolicy.EGRESS, ceiling.stream().map(NetworkEntry::toString).toList(), List.of())
                        : NetworkPolicy.ISOLATED;
        String mode = policy.mode();
        if (mode == null) {
            throw ApiException.badRequest("network.mode is required: none or egress");
        }
        if (!NetworkPolicy.NONE.equals(mode) && !NetworkPolicy.EGRESS.equals(mode)) {
            throw ApiException.badRequest("network.mode must be none or egress, got \"" + mode + "\"");
        }
        List<NetworkEntry> allow = entries("network.allow", policy.allow());
        List<NetworkEntry> deny = entries("network.deny", policy.deny());
        if (!policy.egress()) {
            if (!allow.isEmpty() || !deny.isEmpty()) {
                throw ApiException.badRequest("network.allow and network.deny go with mode egress; mode none has no network");
            }
            return NetworkPolicy.ISOLATED;
        }
        if (!caps.contains(Capability.NETWORK_EGRESS)) {
            throw ApiException.badRequest("backend " + backend + " cannot give its sandboxes a network on this host"
                    + " (it does not report " + Capability.NETWORK_EGRESS + "); use network mode none");
        }
        for (NetworkEntry a : allow) {
            if (ceiling.stream().noneMatch(c -> c.covers(a))) {
                throw ApiException.forbidden("network.allow entry " + a + " is more than the operator allows: clients may"
                        + " allow only what lies inside network_allow (" + (ceiling.isEmpty() ? "empty: no egress at all"
                                : ceiling.stream().map(NetworkEntry::toString).collect(Collectors.joining(", "))) + ")");
            }
        }
        return new NetworkPolicy(NetworkPolicy.EGRESS, allow.stream().map(NetworkEntry::toString).toList(),
                deny.stream().map(NetworkEntry::toString).toList());
    }

    private static List<NetworkEntry> entries(String field, List<String> given) {
        if (given.size() > MAX_ENTRIES) {
            throw ApiException.badRequest(field + " has " + given.size() + " entries; at most " + MAX_ENTRIES);
        }
        List<NetworkEntry> out = new ArrayList<>();
        for (String g : given) {
            try {
                out.add(NetworkEntry.parse(g));
            } catch (IllegalArgumentException e) {
                throw ApiException.badRequest(field + ": " + e.getMessage());
            }
        }
        return out;
    }
}
