package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.URI;

import io.vivarium.api.http.Upstream;

import org.junit.jupiter.api.Test;

class UpstreamProxyTest {
    private final Upstream upstream = new Upstream(URI.create("http://10.213.0.2:8000/a%20b/"), "nothing answers");

    @Test
    void theQueryGoesOnWithoutTheScopedToken() {
        assertEquals("http://10.213.0.2:8000/a%20b/", UpstreamProxy.target(upstream, null).toString());
        assertEquals("http://10.213.0.2:8000/a%20b/?x=1&y=%20", UpstreamProxy.target(upstream, "x=1&vivarium_token=abc&y=%20").toString());
        assertEquals("http://10.213.0.2:8000/a%20b/", UpstreamProxy.target(upstream, "vivarium_token=abc").toString());
        assertEquals("vivarium_tokens=1", UpstreamProxy.withoutToken("vivarium_tokens=1&vivarium_token"));
    }

    @Test
    void theScopedTokensCookieStaysWithTheDaemon() {
        assertEquals("theme=dark; b=2", UpstreamProxy.withoutOurCookie("theme=dark; vivarium_token=x.y;b=2"));
        assertEquals("", UpstreamProxy.withoutOurCookie("vivarium_token=x.y"));
    }

    @Test
    void anUpstreamIsPlainHttpWithoutAQuery() {
        assertThrows(IllegalArgumentException.class, () -> new Upstream(URI.create("https://h:1/"), "x"));
        assertThrows(IllegalArgumentException.class, () -> new Upstream(URI.create("http://h:1/?q"), "x"));
    }
}
