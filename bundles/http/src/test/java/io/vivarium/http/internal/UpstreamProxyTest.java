package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.URI;
import java.util.Map;

import javax.net.ssl.SSLContext;

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
    void aLocationOnTheUpstreamOrFromItsRootStaysUnderThePrefix() {
        URI target = URI.create("http://10.213.0.2:8000/a/");
        String prefix = "/v1/sandboxes/sb-1/ports/8000/";
        assertEquals(prefix + "login?next=%2F", UpstreamProxy.location("http://10.213.0.2:8000/login?next=%2F", target, prefix));
        assertEquals(prefix + "login", UpstreamProxy.location("/login", target, prefix));
        assertEquals(prefix + "x", UpstreamProxy.location(prefix + "x", target, prefix), "an app that knows its prefix");
        assertEquals("next", UpstreamProxy.location("next", target, prefix), "relative: as it is");
        assertEquals("https://example.com/", UpstreamProxy.location("https://example.com/", target, prefix));
        assertEquals("//cdn.example/x", UpstreamProxy.location("//cdn.example/x", target, prefix));
    }

    @Test
    void aLocationOnAnHttpsUpstreamStaysUnderThePrefixToo() throws Exception {
        URI target = URI.create("https://10.213.0.2:8889/v1/sandboxes/sb-1/ports/8000/");
        String prefix = "/v1/sandboxes/sb-1/ports/8000/";
        assertEquals(prefix + "x", UpstreamProxy.location("https://10.213.0.2:8889/x", target, prefix));
        assertEquals("http://10.213.0.2:8889/x", UpstreamProxy.location("http://10.213.0.2:8889/x", target, prefix));
    }

    @Test
    void anUpstreamIsPlainHttpOrHttpsWithItsTlsContextWithoutAQuery() throws Exception {
        SSLContext tls = SSLContext.getDefault();
        assertThrows(IllegalArgumentException.class, () -> new Upstream(URI.create("https://h:1/"), "x"));
        assertThrows(IllegalArgumentException.class, () -> new Upstream(URI.create("http://h:1/?q"), "x"));
        assertThrows(IllegalArgumentException.class, () -> new Upstream(URI.create("http://h:1/"), "x", null, tls, null),
                "a TLS context for plain HTTP is a mistake of the caller's");
        Upstream secure = new Upstream(URI.create("https://h:1/"), "x", null, tls, Map.of("Authorization", "Bearer s"));
        assertEquals(Map.of("Authorization", "Bearer s"), secure.headers());
        assertEquals(Map.of(), upstream.headers());
    }

    @Test
    void aQueryIsPassedOnAsItCameWithWhatCannotStandInAUriEscaped() {
        assertEquals("path=/a/b&x=%41+1", UpstreamProxy.escaped("path=/a/b&x=%41+1"));
        assertEquals("path=/tmp/a%7Cb%20c%7B%7D", UpstreamProxy.escaped("path=/tmp/a|b c{}"));
        assertEquals("p=%25zz&q=%25", UpstreamProxy.escaped("p=%zz&q=%"));
        assertEquals("q=%C3%A9%F0%9F%99%82", UpstreamProxy.escaped("q=\u00e9\ud83d\ude42"));
    }
}
