package io.vivarium.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.CookieManager;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;

import javax.net.ssl.SSLContext;

import com.sun.net.httpserver.HttpServer;

import org.junit.jupiter.api.Test;

class VivariumClientBuilderTest {

    @Test
    void callsGoThroughTheHttpClientGiven() throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/healthz", exchange -> {
            byte[] body = "{\"ok\":true}".getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Set-Cookie", "seen=yes; Path=/");
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        CookieManager cookies = new CookieManager();
        URI base = URI.create("http://127.0.0.1:" + server.getAddress().getPort());
        try (VivariumClient client = VivariumClient.builder(base)
                .httpClient(HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).cookieHandler(cookies).build()).build()) {
            assertTrue(client.healthy());
            assertEquals("seen=yes", cookies.getCookieStore().get(base).get(0).toString(), "the given client made the call");
        } finally {
            server.stop(0);
        }
    }

    @Test
    void anSslContextBesideAGivenHttpClientIsRefused() throws Exception {
        VivariumClient.Builder both = VivariumClient.builder(URI.create("https://127.0.0.1:1")).sslContext(SSLContext.getDefault())
                .httpClient(HttpClient.newHttpClient());
        IllegalStateException e = assertThrows(IllegalStateException.class, both::build);
        assertTrue(e.getMessage().contains("give the SSL context to the HttpClient"), e.getMessage());
    }
}
