package io.vivarium.fleet.internal;

import java.io.IOException;
import java.util.List;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.Route;

/**
 * The fleet's routes, beside the rest of {@code /v1}: the master's {@code /nodes},
 * {@code /node/revoke/{id}} and {@code /node/tokens} (operator), the routes a node that dials in
 * uses ({@code /node/register}, {@code /node/poll}, {@code /node/results}: the {@code node} role,
 * which a registration token or a node's credential carries), and a node's {@code /node/hello}
 * and {@code /node/sandboxes}, which the master calls with the node's pairing secret (operator).
 */
final class FleetSurface implements ApiSurface {
    private final List<Route> routes;

    /** The longest a node's poll is parked when there is nothing for it. */
    static final int MAX_HOLD_SECS = 30;
    static final int DEFAULT_HOLD_SECS = 5;
    /** The largest answers a node posts: a file read of the largest size, in base64, with room for the JSON around it. */
    static final long MAX_RESULTS_BYTES = SandboxService.MAX_FILE_BYTES / 3 * 4 + (1 << 20);

    FleetSurface(Nodes nodes, Registrations registrations, Supplier<NodeHello> hello, Supplier<List<SandboxInfo>> census) {
        this.routes = List.of(
                new Route("POST", "/node/tokens", Role.OPERATOR, 201, r -> unchecked(
                        () -> registrations.issue(r.optionalBody(Registrations.IssueRequest.class).orElse(null)))),
                new Route("POST", "/node/register", Role.NODE, 201, r -> unchecked(() -> nodes.register(registrations,
                        FleetTokens.of(r.caller(), FleetTokens.REGISTRATION, "POST /v1/node/register"),
                        r.body(PullWire.RegisterRequest.class)))),
                new Route("POST", "/node/poll", Role.NODE, 200, r -> poll(nodes,
                        FleetTokens.of(r.caller(), FleetTokens.NODE, "POST /v1/node/poll"), r.body(PullWire.PollRequest.class),
                        holdSecs(r.queryParam("hold_secs").orElse(null)))),
                new Route("POST", "/node/results", Role.NODE, 204, r -> {
                    String id = FleetTokens.of(r.caller(), FleetTokens.NODE, "POST /v1/node/results");
                    PullWire.Results results = r.body(PullWire.Results.class);
                    if (results.results() != null) {
                        PolledTransport polled = nodes.queueOf(id);
                        results.results().forEach(polled::answer);
                    }
                    return null;
                }, MAX_RESULTS_BYTES),
                new Route("POST", "/nodes", Role.OPERATOR, 201, r -> unchecked(() -> nodes.add(r.body(AddNodeRequest.class)))),
                new Route("GET", "/nodes", Role.OPERATOR, 200, r -> nodes.list()),
                new Route("POST", "/node/revoke/{id}", Role.OPERATOR, 200, r -> unchecked(() -> {
                    nodes.revoke(r.pathParam("id"));
                    return nodes.list().stream().filter(n -> n.id().equals(r.pathParam("id"))).findFirst().orElseThrow();
                })),
                new Route("GET", "/node/hello", Role.OPERATOR, 200, r -> hello.get()),
                new Route("GET", "/node/sandboxes", Role.OPERATOR, 200, r -> census.get()));
    }

    /** Parks a node's poll until a call is queued for it or the hold ends; the poll counts as its hello. */
    private static PullWire.PollAnswer poll(Nodes nodes, String id, PullWire.PollRequest request, int holdSecs) {
        if (request.hello() == null) {
            throw ApiException.badRequest("hello is required in every poll: the node's id, version, host fingerprint and load");
        }
        Nodes.Live live = nodes.pollStarted(id, request.hello());
        live.polled.holding(request.holding());
        try {
            return new PullWire.PollAnswer(live.polled.take(java.time.Duration.ofSeconds(holdSecs)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("the master is stopping; poll again", 1);
        } finally {
            nodes.pollEnded(live);
        }
    }

    static int holdSecs(String text) {
        if (text == null) {
            return DEFAULT_HOLD_SECS;
        }
        try {
            int secs = Integer.parseInt(text);
            if (secs >= 0) {
                return Math.min(secs, MAX_HOLD_SECS); // a longer hold a node asks for is cut, not refused
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw ApiException.badRequest("hold_secs must be a whole number of seconds (at most " + MAX_HOLD_SECS
                + " are held), got '" + text + "'");
    }

    private interface Io<T> {
        T get() throws IOException;
    }

    private static <T> T unchecked(Io<T> call) {
        try {
            return call.get();
        } catch (IOException e) {
            throw ApiException.internal("cannot write the master's node records: " + e.getMessage(), e);
        }
    }

    @Override
    public String prefix() {
        return "/v1";
    }

    @Override
    public List<Route> routes() {
        return routes;
    }
}
