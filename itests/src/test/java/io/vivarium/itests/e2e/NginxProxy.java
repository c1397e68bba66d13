package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.vivarium.testkit.TcpPorts;

/**
 * nginx as a reverse proxy in front of one upstream, as a benchmark's reference for what a proxy
 * hop costs on this host: its own prefix directory, one worker, kept connections to the upstream
 * ({@code keepalive}, HTTP/1.1), the forwarding headers the daemon sends, and a bearer token
 * compared before the request goes on. Runs in the foreground as a child of the test; closing
 * stops it.
 */
final class NginxProxy implements AutoCloseable {
    static final Path BINARY = Path.of("/usr/sbin/nginx");
    static final String MISSING = "nginx is not installed (apt-get install nginx-light): the reference proxy's row is left out";

    private final Process process;
    private final int port;

    private NginxProxy(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** nginx's version line, if it is installed. */
    static Optional<String> version() {
        if (!Files.isExecutable(BINARY)) {
            return Optional.empty();
        }
        try {
            Process p = new ProcessBuilder(BINARY.toString(), "-v").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes()).strip();
            return p.waitFor() == 0 ? Optional.of(out.replace("nginx version: ", "")) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /** Starts nginx in {@code dir}, passing requests that carry {@code token} on to {@code upstream} ({@code HOST:PORT}). */
    static NginxProxy start(Path dir, String upstream, String token) throws Exception {
        Files.createDirectories(dir.resolve("tmp"));
        int port = TcpPorts.free();
        String tmp = dir.resolve("tmp").toString();
        Files.writeString(dir.resolve("nginx.conf"), """
                worker_processes 1;
                pid %1$s/nginx.pid;
                error_log %1$s/error.log warn;
                events { worker_connections 64; }
                http {
                    access_log off;
                    client_body_temp_path %2$s; proxy_temp_path %2$s; fastcgi_temp_path %2$s;
                    uwsgi_temp_path %2$s; scgi_temp_path %2$s;
                    upstream sandbox { server %3$s; keepalive 8; }
                    server {
                        listen 127.0.0.1:%4$d;
                        location / {
                            if ($http_authorization != "Bearer %5$s") { return 401; }
                            proxy_pass http://sandbox;
                            proxy_http_version 1.1;
                            proxy_set_header Connection "";
                            proxy_set_header Authorization "";
                            proxy_set_header X-Forwarded-For $remote_addr;
                            proxy_set_header X-Forwarded-Proto $scheme;
                            proxy_set_header X-Forwarded-Host $http_host;
                            proxy_set_header X-Forwarded-Prefix /;
                        }
                    }
                }
                """.formatted(dir, tmp, upstream, port, token));
        Process p = new ProcessBuilder(List.of(BINARY.toString(), "-p", dir.toString(), "-c", dir.resolve("nginx.conf").toString(),
                "-g", "daemon off;")).redirectErrorStream(true).redirectOutput(dir.resolve("stdout.log").toFile()).start();
        NginxProxy proxy = new NginxProxy(p, port);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!TcpPorts.listening("127.0.0.1", port)) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                proxy.close();
                throw new AssertionError("nginx did not start listening on 127.0.0.1:" + port + ": "
                        + Files.readString(dir.resolve("stdout.log")) + readIfThere(dir.resolve("error.log")));
            }
            Thread.sleep(20);
        }
        return proxy;
    }

    private static String readIfThere(Path file) throws IOException {
        return Files.exists(file) ? Files.readString(file) : "";
    }

    /** Its origin, {@code http://127.0.0.1:PORT}. */
    String origin() {
        return "http://127.0.0.1:" + port;
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy(); // SIGTERM: nginx's fast shutdown, workers included
        if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
