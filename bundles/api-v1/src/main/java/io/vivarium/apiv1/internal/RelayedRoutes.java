package io.vivarium.apiv1.internal;

import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

import io.vivarium.api.Relay;
import io.vivarium.api.SandboxService;
import io.vivarium.api.http.RouteHandler;
import io.vivarium.api.http.Upstream;

/**
 * The routes that only reach into one sandbox, passed on as they came to the daemon that runs it
 * when that is another one ({@link SandboxService#relay}: a fleet's master and its node), whose
 * answer is then theirs: the master neither reads their bodies nor writes their answers again.
 */
final class RelayedRoutes {
    private RelayedRoutes() {
    }

    /** {@code here}, unless the sandbox {@code {id}} runs on another daemon: then its route {@code /v1/sandboxes/{id}suffix} there. */
    static RouteHandler orHere(SandboxService sandboxes, String suffix, RouteHandler here) {
        return r -> {
            String id = r.pathParam("id");
            Optional<Relay> relay = sandboxes.relay(r.caller(), id);
            return relay.isEmpty() ? here.handle(r) : upstream(relay.get(), "/v1/sandboxes/" + segment(id) + suffix);
        };
    }

    static Upstream upstream(Relay relay, String path) {
        return new Upstream(URI.create(relay.origin() + path), relay.unreachable(), null, relay.tls(), relay.headers(),
                relay.answerTimeout(), relay.retryAfterSecs(), relay.cuts());
    }

    private static String segment(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
