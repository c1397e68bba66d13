package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.vivarium.api.ApiException;
import io.vivarium.api.Role;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.BinaryBody;
import io.vivarium.api.http.Route;
import io.vivarium.api.spi.RuntimeObserver;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.Version;

/** The edge's rendering of answers, driven through its servlet entry point with stand-in servlet objects. */
class HttpEdgeTest {
    @TempDir
    Path dir;

    private final HttpEdge edge = new HttpEdge();

    @BeforeEach
    void start() throws Exception {
        Path tokens = dir.resolve("tokens");
        Files.writeString(tokens, "t0ken alice admin\n");
        Bundle bundle = proxy(Bundle.class, Map.of("getVersion", new Version(1, 2, 3)));
        edge.activate(proxy(BundleContext.class, Map.of("property vivarium.token.file", tokens.toString(), "getBundle", bundle)));
        ApiSurface surface = new ApiSurface() {
            @Override
            public String prefix() {
                return "/v1";
            }

            @Override
            public List<Route> routes() {
                return List.of(
                        new Route("POST", "/full", Role.USER, 201, r -> {
                            throw ApiException.noCapacity("no free vCPU; retry when a VM ends", 7);
                        }),
                        new Route("POST", "/broken", Role.USER, 201, r -> {
                            throw new ApiException(503, "qemu-system-x86_64 is not installed");
                        }),
                        new Route("GET", "/things/{id}", Role.USER, 200, r -> Map.of("id", r.pathParam("id"))),
                        new Route("GET", "/daemon-wide", Role.OPERATOR, 200, r -> Map.of()),
                        new Route("GET", "/whoami", Role.USER, 200,
                                r -> Map.of("tenant", r.caller().tenant(), "role", r.caller().role().name())),
                        new Route("GET", "/file", Role.USER, 200,
                                r -> BinaryBody.of("application/octet-stream", new byte[] { 0, 'a', 0, (byte) 0xff })));
            }
        };
        edge.bindSurface(surface, proxy(ServiceReference.class, Map.of("getProperty", 1L)));
    }

    @Test
    void aRefusalForLackOfCapacityIsA503WithRetryAfterAndABrokenBackendHasNone() throws Exception {
        Answer full = call("POST", "/v1/full");
        assertEquals(503, full.status);
        assertEquals("7", full.headers.get("Retry-After"));
        assertTrue(full.text().contains("no free vCPU"), full.text());
        Answer broken = call("POST", "/v1/broken");
        assertEquals(503, broken.status);
        assertNull(broken.headers.get("Retry-After"));
    }

    @Test
    void aTenantAdminIsToldHowToGetAnOperatorToken() throws Exception {
        Answer refused = call("GET", "/v1/daemon-wide");
        assertEquals(403, refused.status);
        assertTrue(refused.text().contains("needs an operator token; this token's role is admin"), refused.text());
        assertTrue(refused.text().contains("change 'admin' to 'operator'"), refused.text());
        assertEquals("GET /x needs an admin token; this token's role is user",
                HttpEdge.forbidden("GET /x", Role.ADMIN, Role.USER));
    }

    @Test
    void aTokenFileWithoutAnOperatorIsWarnedAboutOnceAtStart() throws Exception {
        assertEquals(List.of(), startWarnings("ops acme operator\nt0ken alice admin\n"));
        List<String> warned = startWarnings("# written by an older serve\nt0ken default admin\n");
        assertEquals(1, warned.size(), warned.toString());
        assertTrue(warned.get(0).contains("has no operator token: plugin and feature administration"), warned.get(0));
        assertTrue(warned.get(0).contains("change 'admin' to 'operator'"), warned.get(0));
    }

    private List<String> startWarnings(String tokenFile) throws Exception {
        Path tokens = Files.writeString(dir.resolve("tokens-" + tokenFile.hashCode()), tokenFile);
        List<String> warnings = new ArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger logger = Logger.getLogger(HttpEdge.class.getName());
        logger.addHandler(handler);
        try {
            Bundle bundle = proxy(Bundle.class, Map.of("getVersion", new Version(1, 2, 3)));
            new HttpEdge().activate(proxy(BundleContext.class, Map.of("property vivarium.token.file", tokens.toString(), "getBundle", bundle)));
        } finally {
            logger.removeHandler(handler);
        }
        return warnings;
    }

    @Test
    void aBinaryBodyIsWrittenAsIs() throws Exception {
        Answer file = call("GET", "/v1/file");
        assertEquals(200, file.status);
        assertEquals("application/octet-stream", file.contentType);
        assertArrayEquals(new byte[] { 0, 'a', 0, (byte) 0xff }, file.body.toByteArray());
        assertEquals("4", file.headers.get("Content-Length"));
    }

    @Test
    void theObserverIsToldTheMatchedTemplateNotThePath() throws Exception {
        List<String> seen = new ArrayList<>();
        edge.bindObserver(new RuntimeObserver() {
            @Override
            public void requestCompleted(String method, String route, int status, long nanos) {
                seen.add(method + " " + route + " " + status);
            }
        });
        call("GET", "/v1/things/abc");
        call("POST", "/v1/full");
        call("GET", "/v1/nothing-here");
        call("GET", "/healthz");
        assertEquals(List.of("GET /v1/things/{id} 200", "POST /v1/full 503", "GET unmatched 404", "GET /healthz 200"), seen);
    }

    /** An upstream of the relay tests: it records what reached it and answers, or holds the answer until released. */
    private static final class Upstream implements AutoCloseable {
        final com.sun.net.httpserver.HttpServer server;
        final List<String> seen = java.util.Collections.synchronizedList(new ArrayList<>());
        final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);

        Upstream() throws java.io.IOException {
            server = com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
            server.createContext("/", x -> {
                try (x) {
                    String body = new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
                    seen.add(x.getRequestMethod() + " " + x.getRequestURI() + " " + body + " "
                            + x.getRequestHeaders().getFirst("Authorization"));
                    if (x.getRequestURI().getPath().endsWith("/hang")) {
                        release.await();
                    }
                    if (x.getRequestURI().getPath().endsWith("/drop")) {
                        throw new IllegalStateException("the connection goes without an answer");
                    }
                    if (x.getRequestURI().getPath().endsWith("/refuse")) {
                        byte[] refused = "{\"error\":\"invalid bearer token\"}".getBytes(StandardCharsets.UTF_8);
                        x.getResponseHeaders().set("WWW-Authenticate", "Bearer");
                        x.sendResponseHeaders(401, refused.length);
                        x.getResponseBody().write(refused);
                        return;
                    }
                    byte[] answer = "{\"from\":\"upstream\"}".getBytes(StandardCharsets.UTF_8);
                    x.getResponseHeaders().set("Content-Type", "application/json");
                    x.sendResponseHeaders(209, answer.length);
                    x.getResponseBody().write(answer);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
            server.start();
        }

        String base() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        @Override
        public void close() {
            release.countDown();
            server.stop(0);
        }
    }

    /** A surface whose one route answers with an upstream at {@code base}, for the sandbox of its path. */
    private void relayTo(String base, int retryAfterSecs, io.vivarium.api.Relay.Cuts cuts) {
        edge.bindSurface(new ApiSurface() {
            @Override
            public String prefix() {
                return "/r";
            }

            @Override
            public List<Route> routes() {
                return List.of(new Route("POST", "/sandboxes/{id}/{action}", Role.USER, 200,
                        r -> new io.vivarium.api.http.Upstream(java.net.URI.create(base + "/v1/sandboxes/" + r.pathParam("id") + "/"
                                + r.pathParam("action")), "the node is away", null, null, Map.of("Authorization", "Bearer s3cret"),
                                java.time.Duration.ofSeconds(30), retryAfterSecs, cuts)));
            }
        }, proxy(ServiceReference.class, Map.of("getProperty", 2L)));
    }

    @Test
    void aRouteThatAnswersWithAnUpstreamPassesTheRequestOnWithItsBodyAndGivesTheUpstreamsAnswer() throws Exception {
        try (Upstream upstream = new Upstream()) {
            relayTo(upstream.base(), 0, null);
            Answer a = call(edge, "POST", "/r/sandboxes/sb-1/exec", "x=1", "{\"args\":[\"true\"]}".getBytes(StandardCharsets.UTF_8),
                    Map.of("Authorization", "Bearer t0ken", "Content-Type", "application/json"));
            assertEquals(209, a.status, a.text());
            assertEquals("{\"from\":\"upstream\"}", a.text());
            assertEquals(List.of("POST /v1/sandboxes/sb-1/exec?x=1 {\"args\":[\"true\"]} Bearer s3cret"), upstream.seen,
                    "the body the edge read goes on, the caller's token does not");
        }
    }

    @Test
    void anExchangeUnderWayEndsAsA503WhenItsUpstreamIsCutAndStopsWatchingWhenItEnds() throws Exception {
        List<java.util.function.Consumer<String>> watching = new java.util.concurrent.CopyOnWriteArrayList<>();
        io.vivarium.api.Relay.Cuts cuts = exchange -> {
            watching.add(exchange);
            return () -> watching.remove(exchange);
        };
        try (Upstream upstream = new Upstream()) {
            relayTo(upstream.base(), 4, cuts);
            java.util.concurrent.CompletableFuture<Answer> hung = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return call(edge, "POST", "/r/sandboxes/sb-1/hang", null, new byte[0], Map.of("Authorization", "Bearer t0ken"));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            for (long end = System.nanoTime() + 10_000_000_000L; upstream.seen.isEmpty() || watching.isEmpty();) {
                assertTrue(System.nanoTime() < end, "the request reaches the upstream within 10 s");
                Thread.sleep(10);
            }
            assertEquals(1, watching.size());
            watching.get(0).accept("the node went away");
            Answer cut = hung.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(503, cut.status, cut.text());
            assertEquals("4", cut.headers.get("Retry-After"));
            assertTrue(cut.text().contains("the node went away"), cut.text());
            assertEquals(List.of(), watching, "the ended exchange no longer watches");

            Answer done = call(edge, "POST", "/r/sandboxes/sb-2/exec", null, new byte[0], Map.of("Authorization", "Bearer t0ken"));
            assertEquals(209, done.status);
            assertEquals(List.of(), watching);
        }
    }

    @Test
    void anotherDaemonThatDropsTheRequestOrRefusesOurCredentialsIsA503WithItsRetryNotItsAnswer() throws Exception {
        try (Upstream upstream = new Upstream()) {
            relayTo(upstream.base(), 2, null);
            Answer dropped = call(edge, "POST", "/r/sandboxes/sb-1/drop", null, new byte[0], Map.of("Authorization", "Bearer t0ken"));
            assertEquals(503, dropped.status, dropped.text());
            assertEquals("2", dropped.headers.get("Retry-After"));
            Answer refused = call(edge, "POST", "/r/sandboxes/sb-1/refuse", null, new byte[0], Map.of("Authorization", "Bearer t0ken"));
            assertEquals(503, refused.status, refused.text());
            assertEquals("2", refused.headers.get("Retry-After"));
            assertTrue(refused.text().contains("it refused this daemon's credentials"), refused.text());
            assertTrue(refused.text().contains("invalid bearer token"), refused.text());

            relayTo(upstream.base(), 0, null);
            Answer passed = call(edge, "POST", "/r/sandboxes/sb-1/refuse", null, new byte[0], Map.of("Authorization", "Bearer t0ken"));
            assertEquals(401, passed.status, "an app's own 401 through an exposed port is its answer");
        }
    }

    @Test
    void aRelayedRouteAskedToUpgradeIsStillPassedOnAsHttpWithAQueryOfAnyCharacters() throws Exception {
        try (Upstream upstream = new Upstream()) {
            relayTo(upstream.base(), 2, null);
            Answer a = call(edge, "POST", "/r/sandboxes/sb-1/exec", "path=/tmp/a|b c", new byte[0],
                    Map.of("Authorization", "Bearer t0ken", "Upgrade", "websocket", "Connection", "Upgrade"));
            assertEquals(209, a.status, a.text());
            assertEquals(List.of("POST /v1/sandboxes/sb-1/exec?path=/tmp/a%7Cb%20c  Bearer s3cret"), upstream.seen);
        }
    }

    @Test
    void anUpstreamThatCannotBeReachedIsA503WithItsRetryWhenItAsksForOneElseA502() throws Exception {
        int closed;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        relayTo("http://127.0.0.1:" + closed, 3, null);
        Answer away = call(edge, "POST", "/r/sandboxes/sb-1/exec", null, new byte[0], Map.of("Authorization", "Bearer t0ken"));
        assertEquals(503, away.status, away.text());
        assertEquals("3", away.headers.get("Retry-After"));
        assertTrue(away.text().contains("the node is away"), away.text());
        relayTo("http://127.0.0.1:" + closed, 0, null);
        Answer gone = call(edge, "POST", "/r/sandboxes/sb-1/exec", null, new byte[0], Map.of("Authorization", "Bearer t0ken"));
        assertEquals(502, gone.status, gone.text());
    }

    @Test
    void versionListsVersionedSurfacesOnly() throws Exception {
        edge.bindSurface(new ApiSurface() {
            @Override
            public String prefix() {
                return "/metrics";
            }

            @Override
            public List<Route> routes() {
                return List.of();
            }
        }, proxy(ServiceReference.class, Map.of("getProperty", 2L)));
        assertTrue(call("GET", "/version").text().contains("\"apis\":[\"v1\"]"), call("GET", "/version").text());
    }

    /** An edge of a node: the token file of setUp and the pairing secret in {@code secret}. */
    private HttpEdge nodeEdge(Path secret) throws Exception {
        HttpEdge node = new HttpEdge();
        Bundle bundle = proxy(Bundle.class, Map.of("getVersion", new Version(1, 2, 3)));
        node.activate(proxy(BundleContext.class, Map.of("property vivarium.token.file", dir.resolve("tokens").toString(),
                "property vivarium.node.secret.file", secret.toString(), "getBundle", bundle)));
        node.bindSurface(whoami(), proxy(ServiceReference.class, Map.of("getProperty", 1L)));
        return node;
    }

    private static ApiSurface whoami() {
        return surface("/v1", new Route("GET", "/whoami", Role.USER, 200,
                r -> Map.of("tenant", r.caller().tenant(), "role", r.caller().role().name())),
                new Route("GET", "/daemon-wide", Role.OPERATOR, 200, r -> Map.of()));
    }

    private static ApiSurface surface(String prefix, Route... routes) {
        return new ApiSurface() {
            @Override
            public String prefix() {
                return prefix;
            }

            @Override
            public List<Route> routes() {
                return List.of(routes);
            }
        };
    }

    private static Map<String, String> bearer(String token, String... nameValues) {
        Map<String, String> h = new HashMap<>();
        h.put("Authorization", "Bearer " + token);
        for (int i = 0; i < nameValues.length; i += 2) {
            h.put(nameValues[i], nameValues[i + 1]);
        }
        return h;
    }

    @Test
    void onANodeThePairingSecretIsTheMasterActingForTheTenantAndRoleItNames() throws Exception {
        String secret = "0123456789abcdef0123456789abcdef";
        Path file = Files.writeString(dir.resolve("pairing-secret"), secret + "\n");
        HttpEdge node = nodeEdge(file);

        Answer plain = call(node, "GET", "/v1/whoami", bearer(secret));
        assertEquals(200, plain.status, plain.text());
        assertEquals("{\"role\":\"OPERATOR\",\"tenant\":\"default\"}", sorted(plain.text()), "tenant default, role operator");
        assertEquals(200, call(node, "GET", "/v1/daemon-wide", bearer(secret)).status);

        Answer acme = call(node, "GET", "/v1/whoami", bearer(secret, "Vivarium-Tenant", "acme.eu-1_b", "Vivarium-Role", "user"));
        assertEquals("{\"role\":\"USER\",\"tenant\":\"acme.eu-1_b\"}", sorted(acme.text()));
        Answer asUser = call(node, "GET", "/v1/daemon-wide", bearer(secret, "Vivarium-Role", "user"));
        assertEquals(403, asUser.status, "the role it names is the role it gets");
        assertTrue(sorted(call(node, "GET", "/v1/whoami", bearer(secret, "Vivarium-Role", "admin")).text()).contains("ADMIN"));

        for (String[] bad : new String[][] { { "Vivarium-Tenant", "-acme" }, { "Vivarium-Tenant", "a/b" }, { "Vivarium-Tenant", "" },
                { "Vivarium-Tenant", "x".repeat(65) }, { "Vivarium-Role", "root" }, { "Vivarium-Role", "Operator" },
                { "Vivarium-Role", "" } }) {
            Answer refused = call(node, "GET", "/v1/whoami", bearer(secret, bad[0], bad[1]));
            assertEquals(400, refused.status, bad[0] + ": " + bad[1]);
            assertTrue(refused.text().contains(bad[0] + " must be"), refused.text());
        }
        assertEquals(200, call(node, "GET", "/v1/whoami", bearer(secret, "Vivarium-Tenant", "x".repeat(64))).status);

        Answer wrong = call(node, "GET", "/v1/whoami", bearer("0123456789abcdef0123456789abcdee"));
        assertEquals(401, wrong.status);
        assertTrue(wrong.text().contains("invalid bearer token"), wrong.text());
        assertEquals(401, call(node, "GET", "/v1/whoami", bearer(secret.substring(0, 31))).status, "a prefix is no secret");
    }

    @Test
    void onANodeTheTokenFileWorksAsBeforeAndItsCallersCannotNameAnotherTenant() throws Exception {
        HttpEdge node = nodeEdge(Files.writeString(dir.resolve("pairing-secret"), "0123456789abcdef0123456789abcdef\n"));
        Answer alice = call(node, "GET", "/v1/whoami", bearer("t0ken", "Vivarium-Tenant", "bob", "Vivarium-Role", "operator"));
        assertEquals(200, alice.status, alice.text());
        assertEquals("{\"role\":\"ADMIN\",\"tenant\":\"alice\"}", sorted(alice.text()), "the headers are the master's alone");
        assertEquals(200, call(node, "GET", "/v1/whoami", bearer("t0ken", "Vivarium-Role", "nonsense")).status,
                "nor are they checked for a token-file caller");
        assertEquals(403, call(node, "GET", "/v1/daemon-wide", bearer("t0ken", "Vivarium-Role", "operator")).status);
        assertEquals(401, call(edge, "GET", "/v1/whoami", bearer("0123456789abcdef0123456789abcdef")).status,
                "a daemon that is no node has no master's secret");
    }

    @Test
    void aChangedSecretIsReadAgainAndADeletedOneMatchesNothing() throws Exception {
        Path file = Files.writeString(dir.resolve("pairing-secret"), "0123456789abcdef0123456789abcdef\n");
        HttpEdge node = nodeEdge(file);
        assertEquals(200, call(node, "GET", "/v1/whoami", bearer("0123456789abcdef0123456789abcdef")).status);
        Files.writeString(file, "fedcba9876543210fedcba9876543210\n");
        Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 5_000));
        assertEquals(401, call(node, "GET", "/v1/whoami", bearer("0123456789abcdef0123456789abcdef")).status);
        assertEquals(200, call(node, "GET", "/v1/whoami", bearer("fedcba9876543210fedcba9876543210")).status);
        Files.delete(file);
        assertEquals(401, call(node, "GET", "/v1/whoami", bearer("fedcba9876543210fedcba9876543210")).status);
        assertEquals(200, call(node, "GET", "/v1/whoami", bearer("t0ken")).status, "the operator's own tokens still work");
        Files.writeString(file, "\n");
        assertEquals(200, call(node, "GET", "/v1/whoami", bearer("t0ken")).status, "an empty secret file breaks nothing");
    }

    @Test
    void surfacesSharingAPrefixAreServedTogether() throws Exception {
        List<String> seen = new ArrayList<>();
        edge.bindObserver(new RuntimeObserver() {
            @Override
            public void requestCompleted(String method, String route, int status, long nanos) {
                seen.add(method + " " + route + " " + status);
            }
        });
        edge.bindSurface(surface("/v1",
                new Route("GET", "/nodes", Role.USER, 200, r -> Map.of("from", "fleet")),
                new Route("POST", "/nodes", Role.USER, 201, r -> Map.of("from", "fleet")),
                new Route("GET", "/things/{id}", Role.USER, 200, r -> Map.of("from", "fleet")),
                new Route("DELETE", "/things/{id}", Role.USER, 200, r -> Map.of("from", "fleet"))),
                proxy(ServiceReference.class, Map.of("getProperty", 3L)));

        assertEquals("{\"from\":\"fleet\"}", call("GET", "/v1/nodes").text(), "a route only the second surface has");
        assertEquals(201, call("POST", "/v1/nodes").status);
        assertEquals("{\"id\":\"abc\"}", call("GET", "/v1/things/abc").text(), "the first registered wins a route both have");
        assertEquals(200, call("DELETE", "/v1/things/abc").status, "a method only the second has, on a path both have");

        Answer notAllowed = call("PUT", "/v1/things/abc");
        assertEquals(405, notAllowed.status);
        assertEquals("DELETE, GET", notAllowed.headers.get("Allow"), "the methods of every surface");
        assertTrue(notAllowed.text().contains("method PUT is not allowed on /v1/things/abc; allowed: DELETE, GET"), notAllowed.text());
        Answer onlySecond = call("PUT", "/v1/nodes");
        assertEquals(405, onlySecond.status);
        assertEquals("GET, POST", onlySecond.headers.get("Allow"));
        Answer missing = call("GET", "/v1/nowhere");
        assertEquals(404, missing.status);
        assertTrue(missing.text().contains("no route for GET /v1/nowhere"), missing.text());
        Answer noSurface = call("GET", "/v9/nodes");
        assertEquals(404, noSurface.status);
        assertTrue(noSurface.text().contains("API surfaces served here: [/v1] (and /healthz, /version)"), noSurface.text());
        assertTrue(call("GET", "/version").text().contains("\"apis\":[\"v1\"]"), "each prefix once");
        assertEquals(List.of("GET /v1/nodes 200", "POST /v1/nodes 201", "GET /v1/things/{id} 200", "DELETE /v1/things/{id} 200",
                "PUT unmatched 405", "PUT unmatched 405", "GET unmatched 404", "GET unmatched 404", "GET /version 200"), seen);

        edge.unbindSurface(null, proxy(ServiceReference.class, Map.of("getProperty", 1L)));
        assertEquals("{\"from\":\"fleet\"}", call("GET", "/v1/things/abc").text(), "the other surface, once the first is gone");
    }

    @Test
    void withNoSurfaceUpEveryRouteButHealthAndVersionIs503WithRetryAfter() throws Exception {
        edge.unbindSurface(null, proxy(ServiceReference.class, Map.of("getProperty", 1L)));
        Answer down = call("GET", "/v1/sandboxes");
        assertEquals(503, down.status, down.text());
        assertEquals(String.valueOf(HttpEdge.NO_SURFACE_RETRY_SECONDS), down.headers.get("Retry-After"));
        assertTrue(down.text().contains("no API surface is up"), down.text());
        assertEquals(200, call("GET", "/healthz").status);
        assertEquals(200, call("GET", "/version").status);
    }

    /** The JSON object's members sorted by name (Map.of has no order). */
    private static String sorted(String json) {
        String inner = json.substring(1, json.length() - 1);
        return "{" + String.join(",", java.util.Arrays.stream(inner.split(",")).sorted().toList()) + "}";
    }

    private Answer call(String method, String uri) throws Exception {
        return call(edge, method, uri, Map.of("Authorization", "Bearer t0ken"));
    }

    /** A request with exactly {@code headers} (by exact name). */
    private Answer call(HttpEdge to, String method, String uri, Map<String, String> headers) throws Exception {
        return call(to, method, uri, null, new byte[0], headers);
    }

    /** A request with a query string (or null) and a body as well. */
    private Answer call(HttpEdge to, String method, String uri, String query, byte[] body, Map<String, String> headers)
            throws Exception {
        Map<String, Object> answers = new HashMap<>();
        answers.put("getMethod", method);
        answers.put("getRequestURI", uri);
        answers.put("getQueryString", query);
        answers.put("getContentLengthLong", (long) body.length);
        answers.put("getInputStream", new Input(body));
        answers.put("getRemoteAddr", "127.0.0.1");
        answers.put("getScheme", "http");
        answers.put("getServerName", "localhost");
        HttpServletRequest req = (HttpServletRequest) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] { HttpServletRequest.class }, (p, m, args) -> switch (m.getName()) {
                    case "getHeader" -> headers.get((String) args[0]);
                    case "getHeaderNames" -> java.util.Collections.enumeration(headers.keySet());
                    case "getHeaders" -> java.util.Collections.enumeration(
                            headers.containsKey((String) args[0]) ? List.of(headers.get((String) args[0])) : List.of());
                    default -> answers.get(m.getName());
                });
        Answer answer = new Answer();
        HttpServletResponse resp = (HttpServletResponse) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] { HttpServletResponse.class }, (p, m, args) -> {
                    switch (m.getName()) {
                        case "setStatus" -> answer.status = (Integer) args[0];
                        case "setHeader" -> answer.headers.put((String) args[0], (String) args[1]);
                        case "setContentType" -> answer.contentType = (String) args[0];
                        case "setContentLength" -> answer.headers.put("Content-Length", args[0].toString());
                        case "setContentLengthLong" -> answer.headers.put("Content-Length", args[0].toString());
                        case "getOutputStream" -> {
                            return answer.output();
                        }
                        case "getStatus" -> {
                            return answer.status;
                        }
                        default -> {
                        }
                    }
                    return null;
                });
        to.service(req, resp);
        return answer;
    }

    @SuppressWarnings("unchecked")
    private static <T> T proxy(Class<T> type, Map<String, Object> answers) {
        return (T) Proxy.newProxyInstance(HttpEdgeTest.class.getClassLoader(), new Class<?>[] { type },
                (p, m, args) -> {
                    if (m.getName().equals("getProperty") && type == ServiceReference.class) {
                        return Constants.SERVICE_ID.equals(args[0]) ? answers.get("getProperty") : null;
                    }
                    if (m.getName().equals("getProperty") && type == BundleContext.class) {
                        return answers.get("property " + args[0]);
                    }
                    return answers.get(m.getName());
                });
    }

    private static final class Answer {
        int status;
        String contentType;
        final Map<String, String> headers = new HashMap<>();
        final ByteArrayOutputStream body = new ByteArrayOutputStream();

        String text() {
            return body.toString(StandardCharsets.UTF_8);
        }

        ServletOutputStream output() {
            return new ServletOutputStream() {
                @Override
                public void write(int b) {
                    body.write(b);
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setWriteListener(WriteListener listener) {
                }
            };
        }
    }

    private static final class Input extends ServletInputStream {
        private final ByteArrayInputStream in;

        Input(byte[] bytes) {
            in = new ByteArrayInputStream(bytes);
        }

        @Override
        public int read() {
            return in.read();
        }

        @Override
        public boolean isFinished() {
            return in.available() == 0;
        }

        @Override
        public boolean isReady() {
            return true;
        }

        @Override
        public void setReadListener(ReadListener listener) {
        }
    }
}
