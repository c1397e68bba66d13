package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import com.sun.net.httpserver.HttpServer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AdminClientTest {
    @TempDir
    Path dir;

    @Test
    void parsesTheVerbs() {
        assertEquals(new AdminClient.Call("GET", "/v1/plugins", null, 200), AdminClient.parse("plugins", List.of()));
        assertEquals(new AdminClient.Call("PUT", "/v1/plugins/a.b", Path.of("x.jar"), 200),
                AdminClient.parse("plugins", List.of("update", "a.b", "x.jar")));
        assertEquals(new AdminClient.Call("DELETE", "/v1/plugins/a.b", null, 204), AdminClient.parse("plugins", List.of("remove", "a.b")));
        assertEquals(new AdminClient.Call("POST", "/v1/features/procbox/disable", null, 200),
                AdminClient.parse("features", List.of("disable", "procbox")));
        assertNull(AdminClient.parse("plugins", List.of("install")));
        assertNull(AdminClient.parse("features", List.of("frob", "x")));
    }

    @Test
    void talksToTheDaemonWithTheTokenAndReportsItsErrors() throws Exception {
        Path tokens = Files.writeString(dir.resolve("tokens"), "# comment\nsecret default operator\n");
        Path jar = Files.write(dir.resolve("p.jar"), new byte[] { 1, 2, 3 });
        List<String> seen = new CopyOnWriteArrayList<>();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            byte[] body = exchange.getRequestBody().readAllBytes();
            seen.add(exchange.getRequestMethod() + " " + exchange.getRequestURI() + " " + body.length + " "
                    + exchange.getRequestHeaders().getFirst("Authorization"));
            String answer = exchange.getRequestMethod().equals("POST")
                    ? "{\"id\":9,\"symbolic_name\":\"x.y\",\"version\":\"1.0.0\",\"state\":\"active\"}"
                    : "{\"error\":\"no bundle x.y\"}";
            byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(exchange.getRequestMethod().equals("POST") ? 201 : 404, bytes.length);
            exchange.getResponseBody().write(bytes);
            exchange.close();
        });
        server.start();
        try {
            String url = "http://127.0.0.1:" + server.getAddress().getPort();
            var out = new ByteArrayOutputStream();
            var err = new ByteArrayOutputStream();
            int code = AdminClient.run("plugins", List.of("install", jar.toString(), "--url", url),
                    Callers.withEnv(Map.of("VIVARIUM_TOKEN_FILE", tokens.toString())), new PrintStream(out), new PrintStream(err));
            assertEquals(0, code, err.toString());
            assertEquals("installed x.y 1.0.0 (active)\n", out.toString());
            assertEquals("POST /v1/plugins 3 Bearer secret", seen.get(0));

            code = AdminClient.run("plugins", List.of("remove", "x.y", "--url", url, "--token-file", tokens.toString()),
                    Callers.withEnv(Map.of()), new PrintStream(out), new PrintStream(err));
            assertEquals(1, code);
            assertTrue(err.toString().contains("no bundle x.y (HTTP 404)"), err.toString());
        } finally {
            server.stop(0);
        }
    }

    @Test
    void aRefusalForLackOfAnOperatorTokenSaysHowToGetOne() throws Exception {
        Path tokens = Files.writeString(dir.resolve("tokens"), "abc default admin\n");
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            byte[] bytes = "{\"error\":\"GET /v1/features needs an operator token\"}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(403, bytes.length);
            exchange.getResponseBody().write(bytes);
            exchange.close();
        });
        server.start();
        try {
            var err = new ByteArrayOutputStream();
            int code = AdminClient.run("features", List.of("--url", "http://127.0.0.1:" + server.getAddress().getPort(),
                    "--token-file", tokens.toString()), Callers.withEnv(Map.of()), new PrintStream(new ByteArrayOutputStream()), new PrintStream(err));
            assertEquals(1, code);
            assertEquals(AdminClient.notAnOperator(tokens.toString()) + "\n", err.toString());
            assertTrue(err.toString().contains("change 'admin' to 'operator' on the line of the token that administers the daemon"),
                    err.toString());
        } finally {
            server.stop(0);
        }
    }

    @Test
    void saysWhenNoDaemonAnswers() throws Exception {
        Path tokens = Files.writeString(dir.resolve("tokens"), "t\n");
        var err = new ByteArrayOutputStream();
        int code = AdminClient.run("features", List.of("--url", "http://127.0.0.1:1"), Callers.withEnv(Map.of("VIVARIUM_TOKEN_FILE", tokens.toString())),
                new PrintStream(new ByteArrayOutputStream()), new PrintStream(err));
        assertEquals(1, code);
        assertTrue(err.toString().contains("no daemon answers"), err.toString());
    }
}
