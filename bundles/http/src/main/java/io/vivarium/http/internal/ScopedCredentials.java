package io.vivarium.http.internal;

import java.util.List;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.http.ScopedTokens;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;

/**
 * The scoped tokens of requests without an {@code Authorization} header ({@link ScopedTokens}): found
 * in the query or a cookie, good only on routes that pass requests on, and only where a service
 * that issues them vouches for the path.
 */
final class ScopedCredentials {
    private final List<ScopedTokens> issuers;

    /** @param issuers the registered services, as the edge keeps them (read at each request) */
    ScopedCredentials(List<ScopedTokens> issuers) {
        this.issuers = issuers;
    }

    /** A scoped token in the query ({@link ScopedTokens#PARAMETER}) of a request without an {@code Authorization} header, or null. */
    static String inQuery(HttpServletRequest req) {
        String q = req.getQueryString();
        if (req.getHeader("Authorization") != null || q == null || !q.contains(ScopedTokens.PARAMETER + "=")) {
            return null;
        }
        String token = HttpEdge.query(q).get(ScopedTokens.PARAMETER);
        return token == null || token.isBlank() ? null : token;
    }

    /** Whether the request carries a scoped token and no {@code Authorization} header. */
    static boolean carried(HttpServletRequest req) {
        return req.getHeader("Authorization") == null && (inQuery(req) != null || inCookie(req) != null);
    }

    private static String inCookie(HttpServletRequest req) {
        Cookie[] cookies = req.getCookies();
        if (cookies == null) {
            return null;
        }
        for (Cookie c : cookies) {
            if (c.getName().equals(ScopedTokens.PARAMETER) && !c.getValue().isBlank()) {
                return c.getValue();
            }
        }
        return null;
    }

    /**
     * The caller the request's scoped token (in the query, else its cookie) stands for on
     * {@code path} (decoded segments), which only routes that pass requests on take; else a 401.
     */
    Caller caller(HttpServletRequest req, List<String> path, boolean passedOn) {
        String query = inQuery(req);
        String scoped = query != null ? query : inCookie(req);
        if (scoped == null || !passedOn) {
            throw new ApiException(401, "missing bearer token: send 'Authorization: Bearer <token>' with a token from the token file"
                    + (scoped == null ? "" : " (a " + ScopedTokens.PARAMETER + " is only good for the URL it was signed for)"));
        }
        String decoded = "/" + String.join("/", path);
        for (ScopedTokens issuer : issuers) {
            Optional<Caller> c = issuer.caller(scoped, decoded);
            if (c.isPresent()) {
                return c.get();
            }
        }
        throw new ApiException(401, "the " + ScopedTokens.PARAMETER + " of this request is not valid for " + decoded
                + " (expired, or signed for another sandbox or port): ask for a new signed URL, or send"
                + " 'Authorization: Bearer <token>'");
    }
}
