package io.vivarium.common.net;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vivarium.api.NetworkPolicy;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class SavedPolicyTest {

    @Test
    void aPolicyComesBackAsItWasKeptUnderItsPrefix() {
        SavedPolicy kept = new SavedPolicy(new NetworkPolicy(NetworkPolicy.EGRESS, List.of("10.0.0.0/8", "203.0.113.7/32:443"),
                List.of("10.1.0.0/16")), "10.0.0.53");
        Map<String, String> text = kept.toText("network_");
        assertEquals(Map.of("network_allow", "10.0.0.0/8 203.0.113.7/32:443", "network_deny", "10.1.0.0/16",
                "network_resolver", "10.0.0.53"), text);
        assertEquals(Optional.of(kept), SavedPolicy.fromText(text, "network_"));
    }

    @Test
    void emptyListsAndNoResolverComeBackSoAndNothingKeptIsEmpty() {
        SavedPolicy bare = new SavedPolicy(new NetworkPolicy(NetworkPolicy.EGRESS, List.of(), List.of()), null);
        assertEquals(Optional.of(bare), SavedPolicy.fromText(bare.toText("p."), "p."));
        assertEquals(Optional.empty(), SavedPolicy.fromText(Map.of("other", "x"), "p."));
    }
}
