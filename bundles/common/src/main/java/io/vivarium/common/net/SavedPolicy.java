package io.vivarium.common.net;

import io.vivarium.api.NetworkPolicy;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An {@code egress} policy and the resolver (or null) a sandbox's network was made under, as text
 * a backend keeps beside the sandbox (a VM's record, a container's spec annotations), so that the
 * network can be made again where the host lost it (a reboot). Entries are joined by spaces, which
 * no entry holds.
 */
public record SavedPolicy(NetworkPolicy policy, String resolver) {

    /** The policy as entries named {@code prefix + "allow"}, {@code "deny"} and (when set) {@code "resolver"}. */
    public Map<String, String> toText(String prefix) {
        Map<String, String> text = new LinkedHashMap<>();
        text.put(prefix + "allow", String.join(" ", policy.allow()));
        text.put(prefix + "deny", String.join(" ", policy.deny()));
        if (resolver != null) {
            text.put(prefix + "resolver", resolver);
        }
        return text;
    }

    /** What {@link #toText} wrote with {@code prefix} into {@code text}; empty when it wrote nothing there. */
    public static Optional<SavedPolicy> fromText(Map<String, String> text, String prefix) {
        String allow = text.get(prefix + "allow");
        if (allow == null) {
            return Optional.empty();
        }
        return Optional.of(new SavedPolicy(new NetworkPolicy(NetworkPolicy.EGRESS, entries(allow),
                entries(text.getOrDefault(prefix + "deny", ""))), text.get(prefix + "resolver")));
    }

    private static List<String> entries(String joined) {
        return joined.isBlank() ? List.of() : List.of(joined.split(" "));
    }
}
