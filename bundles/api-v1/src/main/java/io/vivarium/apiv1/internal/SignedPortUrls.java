package io.vivarium.apiv1.internal;

import java.util.Optional;

import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferencePolicyOption;

import io.vivarium.api.Caller;
import io.vivarium.api.PortService;
import io.vivarium.api.http.ScopedTokens;

/** The signed URLs of exposed ports: a token is good on {@code /v1/sandboxes/{id}/ports/{port}/...} of the port it was signed for. */
@Component(service = ScopedTokens.class)
public class SignedPortUrls implements ScopedTokens {
    /** Greedy: a fleet's master ranks its own above core's, for the tokens it signs for its nodes' sandboxes. */
    @Reference(policyOption = ReferencePolicyOption.GREEDY)
    private PortService ports;

    @Override
    public Optional<Caller> caller(String token, String path) {
        String[] s = path.split("/", 7); // "", v1, sandboxes, id, ports, port, rest
        if (s.length < 6 || !s[1].equals("v1") || !s[2].equals("sandboxes") || !s[4].equals("ports")) {
            return Optional.empty();
        }
        try {
            return ports.signedCaller(token, s[3], Integer.parseInt(s[5]));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }
}
