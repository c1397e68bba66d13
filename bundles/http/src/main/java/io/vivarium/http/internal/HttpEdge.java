package io.vivarium.http.internal;

import java.io.IOException;
import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.BearerTokens;
import io.vivarium.api.http.BinaryBody;
import io.vivarium.api.http.Route;
import io.vivarium.api.http.ScopedTokens;
import io.vivarium.api.http.Upstream;
import io.vivarium.api.http.WebSocketEndpoint;
import io.vivarium.api.spi.RuntimeObserver;

import jakarta.servlet.Servlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.Version;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;
import org.osgi.service.servlet.whiteboard.HttpWhiteboardConstants;

/**
 * The edge of the daemon: one servlet that answers {@code /healthz} without credentials, checks
 * the bearer token of everything else, limits body size, dispatches to the registered
 * {@link ApiSurface}s and renders every failure as {@code {"error": "..."}}. Several surfaces may
 * share a prefix (api-v1's and the fleet's {@code /v1}): a request goes to the first, in the
 * order they were registered, that has a route for its method and path. On a node
 * ({@code vivarium.node.secret.file} set) the pairing secret is also a bearer token: the master's
 * (see {@link NodeSecret}).
 */
@Component(service = Servlet.class, property = {
        HttpWhiteboardConstants.HTTP_WHITEBOARD_SERVLET_PATTERN + "=/*",
        HttpWhiteboardConstants.HTTP_WHITEBOARD_SERVLET_NAME + "=vivarium" })
public class HttpEdge extends HttpServlet {
    private static final long serialVersionUID = 1L;
    private static final System.Logger LOG = System.getLogger(HttpEdge.class.getName());

    /** How far past its limit an oversized body is still read and dropped before answering 413. */
    private static final long MAX_DRAINED_EXCESS_BYTES = 16L << 20;
    /** The route label of a request answered before a route matched (401, 404, 405). */
    static final String UNMATCHED = "unmatched";
    /** Prefixes of versioned API surfaces, which {@code /version} lists; others (such as {@code /metrics}) are not. */
    private static final Pattern API_VERSION = Pattern.compile("/v[0-9]+");

    /** Retry-After of the 503 while no surface is up (a start or an API bundle's upgrade takes about this long). */
    static final int NO_SURFACE_RETRY_SECONDS = 5;
    /** By service id: the order surfaces were registered in, which decides between two with one route. */
    private final transient Map<Long, Router> surfaces = new ConcurrentSkipListMap<>();
    private final transient JsonCodec json = new JsonCodec();
    private transient TokenFile tokens;
    private transient NodeSecret nodeSecret;
    private String version;
    private transient volatile RuntimeObserver observer = RuntimeObserver.NONE;

    @Activate
    void activate(BundleContext context) {
        String file = context.getProperty("vivarium.token.file");
        tokens = file == null || file.isBlank() ? null : new TokenFile(Path.of(file));
        String secretFile = context.getProperty("vivarium.node.secret.file");
        nodeSecret = secretFile == null || secretFile.isBlank() ? null : new NodeSecret(Path.of(secretFile));
        Version v = context.getBundle().getVersion();
        version = v.getMajor() + "." + v.getMinor() + "." + v.getMicro();
        if (tokens == null) {
            LOG.log(Level.WARNING, "vivarium.token.file is not set: every route but /healthz will answer 401");
        } else {
            warnWithoutOperator(tokens);
        }
    }

    /** The proxy's clients go with the edge: a bundle update must not leave their threads and connections behind. */
    @Deactivate
    void deactivate() {
        proxy.close();
    }

    /** Existing token files keep working, but their admins lost daemon-wide administration: say so once, at start. */
    private static void warnWithoutOperator(TokenFile tokens) {
        try {
            if (!tokens.hasOperator()) {
                LOG.log(Level.WARNING, "the token file " + tokens.file() + " has no operator token: plugin and feature"
                        + " administration (/v1/plugins, /v1/features, ./vivarium plugins|features) will answer 403."
                        + " To fix it: " + TokenFile.HOW_TO_GET_AN_OPERATOR_TOKEN);
            }
        } catch (IOException | IllegalArgumentException e) {
            LOG.log(Level.WARNING, "cannot read the token file " + tokens.file() + ": " + e.getMessage()
                    + "; requests will fail until it is fixed");
        }
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindSurface(ApiSurface surface, ServiceReference<ApiSurface> ref) {
        surfaces.put((Long) ref.getProperty(Constants.SERVICE_ID), new Router(surface));
    }

    void unbindSurface(ApiSurface surface, ServiceReference<ApiSurface> ref) {
        surfaces.remove((Long) ref.getProperty(Constants.SERVICE_ID));
    }

    /** Tokens other bundles issue (the fleet's registration tokens and node credentials), asked after the token file. */
    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    private final transient List<BearerTokens> issuedTokens = new CopyOnWriteArrayList<>();

    /** Credentials good for part of the API (signed URLs of exposed ports), asked when a request has no bearer token. */
    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    private final transient List<ScopedTokens> scopedTokens = new CopyOnWriteArrayList<>();
    private final transient ScopedCredentials scoped = new ScopedCredentials(scopedTokens);
    private final transient UpstreamProxy proxy = new UpstreamProxy();

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindObserver(RuntimeObserver o) {
        observer = o;
    }

    void unbindObserver(RuntimeObserver o) {
        if (observer == o) {
            observer = RuntimeObserver.NONE;
        }
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        long start = System.nanoTime();
        String[] route = {UNMATCHED};
        try {
            answer(req, resp, route);
        } finally {
            observer.requestCompleted(req.getMethod(), route[0], resp.getStatus(), System.nanoTime() - start);
        }
    }

    /** Answers the request; {@code route[0]} is set to the matched route's template once there is one. */
    private void answer(HttpServletRequest req, HttpServletResponse resp, String[] route) throws IOException {
        try {
            handle(req, resp, route);
        } catch (ApiException e) {
            if (e.retryAfterSeconds() != null) {
                resp.setHeader("Retry-After", String.valueOf(e.retryAfterSeconds()));
            }
            if (e.status() >= 500) {
                LOG.log(Level.WARNING, req.getMethod() + " " + req.getRequestURI() + ": " + e.getMessage(), e.getCause());
            }
            dropUnreadBody(req);
            send(resp, e.status(), json.error(e.getMessage()));
        } catch (RuntimeException | LinkageError e) {
            // a LinkageError is a plugin's code failing while its bundle is swapped: still a JSON 500
            LOG.log(Level.ERROR, req.getMethod() + " " + req.getRequestURI() + " failed", e);
            send(resp, 500, json.error("internal error (" + e.getClass().getSimpleName() + "): " + e.getMessage()
                    + "; this is a bug, see the daemon log"));
        }
    }

    private void handle(HttpServletRequest req, HttpServletResponse resp, String[] routeLabel) throws IOException {
        List<String> path = segments(req.getRequestURI());
        String method = req.getMethod();
        if (path.equals(List.of("healthz"))) {
            routeLabel[0] = "/healthz";
            send(resp, 200, json.write(Map.of("ok", true)));
            return;
        }
        Caller bearer = authenticate(req, resp);
        if (path.equals(List.of("version"))) {
            routeLabel[0] = "/version";
            if (bearer == null) {
                scoped.caller(req, path, false); // refused: scoped tokens are for what they were signed for
            }
            send(resp, 200, json.write(versionBody()));
            return;
        }
        if (surfaces.isEmpty()) {
            throw ApiException.unavailable("no API surface is up: the daemon is starting or stopping, or a bundle the API"
                    + " needs did not start (the daemon's log says which)", NO_SURFACE_RETRY_SECONDS);
        }
        List<Router> routers = path.isEmpty() ? List.of() : routersFor("/" + path.get(0));
        if (routers.isEmpty()) {
            throw ApiException.notFound("no route for " + req.getRequestURI() + "; API surfaces served here: "
                    + servedPrefixes() + " (and /healthz, /version)");
        }
        Router router = null;
        Router.Match m = null;
        Set<String> allowed = new TreeSet<>();
        for (Router r : routers) {
            Optional<Router.Match> found = r.match(method, path.subList(1, path.size()),
                    "/" + Router.rawTail(req.getRequestURI(), 1));
            if (found.isPresent() && found.get().route() != null) {
                router = r;
                m = found.get();
                break;
            }
            found.ifPresent(f -> allowed.addAll(f.allowed()));
        }
        if (m == null && allowed.isEmpty()) {
            throw ApiException.notFound("no route for " + method + " " + req.getRequestURI());
        }
        if (m == null) {
            resp.setHeader("Allow", String.join(", ", allowed));
            throw new ApiException(405, "method " + method + " is not allowed on " + req.getRequestURI()
                    + "; allowed: " + String.join(", ", allowed));
        }
        Route route = m.route();
        routeLabel[0] = router.prefix() + route.template();
        boolean passedOn = route.method().equals(Route.ANY_METHOD);
        Caller caller = bearer != null ? bearer : scoped.caller(req, path, passedOn);
        if (!caller.role().allows(route.role())) {
            throw ApiException.forbidden(forbidden(method + " " + req.getRequestURI(), route.role(), caller.role()));
        }
        byte[] body = passedOn ? null : readBody(req, route.maxBodyBytes());
        var request = new ParsedRequest(caller, m.params(), query(req.getQueryString()), req::getHeader,
                body == null ? new byte[0] : body, json);
        Object result = route.handler().handle(request);
        if (passedOn) {
            if (!(result instanceof Upstream upstream)) {
                throw new IllegalStateException(routeLabel[0] + " matches every method but did not answer with an Upstream");
            }
            proxy.passOn(req, resp, upstream, router.prefix() + Router.tailBase(route, path.subList(1, path.size())),
                    ScopedCredentials.inQuery(req), null);
            return;
        }
        if (result instanceof Upstream relayed) {
            proxy.passOn(req, resp, relayed, "/", null, body); // the same path on the upstream: its root is ours
            return;
        }
        if (route.status() == 204 || result == null) {
            resp.setStatus(route.status());
            return;
        }
        if (result instanceof WebSocketEndpoint endpoint) {
            try {
                WebSocketUpgrader.upgrade(req, endpoint);
            } catch (IOException | RuntimeException e) {
                endpoint.closed(1002, "not upgraded: " + e.getMessage());
                throw e;
            }
            return;
        }
        if (result instanceof BinaryBody binary) {
            resp.setStatus(binary.status(route.status()));
            resp.setContentType(binary.contentType());
            if (binary.length() >= 0) {
                resp.setContentLengthLong(binary.length());
            }
            binary.writeTo(resp.getOutputStream());
            return;
        }
        send(resp, route.status(), json.write(result));
    }

    /** The caller of a request by its bearer token; null when it has no {@code Authorization} header but a scoped token may stand in. */
    private Caller authenticate(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String header = req.getHeader("Authorization");
        resp.setHeader("WWW-Authenticate", "Bearer");
        if (ScopedCredentials.carried(req)) {
            return null;
        }
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7) || header.substring(7).isBlank()) {
            throw new ApiException(401, "missing bearer token: send 'Authorization: Bearer <token>' with a token from the token file");
        }
        String token = header.substring(7).strip();
        // The master's secret first: it does not depend on the token file. A secret that cannot be
        // read leaves the token file's tokens working; only a token neither accepts is then a 503.
        IOException unreadableSecret = null;
        if (nodeSecret != null) {
            try {
                if (nodeSecret.matches(token)) {
                    req.setAttribute(UpstreamProxy.FROM_MASTER, Boolean.TRUE);
                    return NodeSecret.masterCaller(req.getHeader(NodeSecret.TENANT_HEADER), req.getHeader(NodeSecret.ROLE_HEADER));
                }
            } catch (IOException e) {
                unreadableSecret = e;
            }
        }
        Optional<Caller> caller = Optional.empty();
        if (tokens != null) {
            try {
                caller = tokens.lookup(token);
            } catch (IllegalArgumentException e) {
                throw ApiException.internal("the token file is invalid: " + e.getMessage(), e);
            } catch (IOException e) {
                throw new ApiException(503, "cannot read the token file (" + e + "); retry shortly", 1, e);
            }
        }
        if (caller.isPresent()) {
            return caller.get();
        }
        for (BearerTokens issued : issuedTokens) {
            Optional<Caller> c = issued.caller(token);
            if (c.isPresent()) {
                return c.get();
            }
        }
        if (unreadableSecret != null) {
            throw new ApiException(503, "cannot read the node's pairing secret " + nodeSecret.file() + " (" + unreadableSecret
                    + "); retry shortly", 1, unreadableSecret);
        }
        if (tokens == null) {
            throw new ApiException(401, "this daemon has no token file configured (vivarium.token.file), so no token is valid");
        }
        throw new ApiException(401, "invalid bearer token");
    }

    static String forbidden(String request, Role needed, Role has) {
        String article = name(needed).matches("[aeiou].*") ? "an " : "a ";
        String message = request + " needs " + article + name(needed) + " token; this token's role is "
                + name(has);
        return needed == Role.OPERATOR
                ? message + " (daemon-wide administration is not a tenant's): " + TokenFile.HOW_TO_GET_AN_OPERATOR_TOKEN
                : message;
    }

    private static String name(Role role) {
        return role.name().toLowerCase(Locale.ROOT);
    }

    /** The surfaces under {@code prefix}, first registered first. */
    private List<Router> routersFor(String prefix) {
        return surfaces.values().stream().filter(r -> r.prefix().equals(prefix)).toList();
    }

    private List<String> servedPrefixes() {
        return surfaces.values().stream().map(Router::prefix).distinct().sorted().toList();
    }

    private Map<String, Object> versionBody() {
        List<String> apis = servedPrefixes().stream().filter(p -> API_VERSION.matcher(p).matches())
                .map(p -> p.substring(1)).toList();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("version", version);
        body.put("api", apis.isEmpty() ? "" : apis.get(apis.size() - 1));
        body.put("apis", apis);
        return body;
    }

    private static byte[] readBody(HttpServletRequest req, long limit) throws IOException {
        long declared = req.getContentLengthLong();
        if (declared > limit && expectsContinue(req)) {
            // Answered before the input stream is opened, which would send "100 Continue": the
            // client (curl does this for any large body) then never sends the body at all.
            throw tooLarge(limit);
        }
        try (InputStream in = req.getInputStream()) {
            if (declared > limit) {
                drain(in, limit);
                throw tooLarge(limit);
            }
            byte[] body = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, limit + 1));
            if (body.length > limit) {
                drain(in, limit);
                throw tooLarge(limit);
            }
            return body;
        }
    }

    private static boolean expectsContinue(HttpServletRequest req) {
        String expect = req.getHeader("Expect");
        return expect != null && expect.trim().equalsIgnoreCase("100-continue");
    }

    /**
     * Reads and drops what is left of a body refused before it was read (a 401, 403 or 404 to an
     * upload), as for a 413 and for the same reason. A body the client holds back for "100
     * Continue" is left unasked for.
     */
    private static void dropUnreadBody(HttpServletRequest req) {
        if (expectsContinue(req) || req.getContentLengthLong() == 0) {
            return;
        }
        try (InputStream in = req.getInputStream()) {
            drain(in, 0);
        } catch (IOException | IllegalStateException e) {
            // the connection is closed after the answer anyway; the client may then see a reset
        }
    }

    /**
     * Reads and drops a body up to {@link #MAX_DRAINED_EXCESS_BYTES} past its limit: a client still
     * sending when the answer comes and the connection closes would see a reset instead of the 413.
     */
    private static void drain(InputStream in, long limit) throws IOException {
        long left = limit + MAX_DRAINED_EXCESS_BYTES;
        while (left > 0 && in.read() >= 0) {
            left -= 1 + in.skip(Math.min(left, 64 * 1024));
        }
    }

    private static ApiException tooLarge(long limit) {
        return new ApiException(413, "request body exceeds " + limit + " bytes");
    }

    /**
     * Parameters of the query string only (the first value of each). Not the servlet's parameter
     * map: for a form content type (curl's default for --data-binary) that would also consume and
     * parse the body, which belongs to the route, such as an uploaded jar.
     */
    static Map<String, String> query(String rawQuery) {
        Map<String, String> q = new LinkedHashMap<>();
        if (rawQuery == null) {
            return q;
        }
        for (String pair : rawQuery.split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            try {
                q.putIfAbsent(URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8),
                        eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                throw ApiException.badRequest("malformed percent-encoding in query parameter \"" + pair + "\"");
            }
        }
        return q;
    }

    static List<String> segments(String rawPath) {
        List<String> out = new ArrayList<>();
        for (String s : rawPath.split("/")) {
            if (s.isEmpty()) {
                continue;
            }
            try {
                out.add(URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                throw ApiException.badRequest("malformed percent-encoding in path segment \"" + s + "\"");
            }
        }
        return out;
    }

    private static void send(HttpServletResponse resp, int status, byte[] body) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.setContentLength(body.length);
        resp.getOutputStream().write(body);
    }
}
