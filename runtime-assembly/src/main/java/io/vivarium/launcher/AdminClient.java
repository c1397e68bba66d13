package io.vivarium.launcher;

import java.io.IOException;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.net.ssl.SSLHandshakeException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * {@code vivarium plugins ...} and {@code vivarium features ...}: the operator's HTTP routes of a
 * running daemon, from a shell. The daemon and the token are found as {@link DaemonTarget} says
 * (the token: the first operator token of the token file, else its first). A daemon that serves
 * HTTPS with a certificate no public authority signed (a self-signed one) is trusted through
 * {@code --cacert} (or {@code $VIVARIUM_CACERT}): a PEM file, e.g. the one given to {@code serve --tls-cert}.
 */
final class AdminClient {
    static final String USAGE = """
            usage: vivarium plugins [list] | install JAR | update NAME JAR | remove NAME
                   vivarium features [list] | enable NAME | disable NAME
              the daemon: --url U, else $VIVARIUM_URL, else the address the daemon wrote in --state DIR
              ($VIVARIUM_STATE, default ./var); the token: --token T, else $VIVARIUM_TOKEN, else the first
              operator token of --token-file F ($VIVARIUM_TOKEN_FILE, default DIR/tokens); --cacert PEM
              ($VIVARIUM_CACERT) for a daemon whose HTTPS certificate no public authority signed
            """;

    private static final ObjectMapper JSON = new ObjectMapper();

    /** A request the command line asked for. */
    record Call(String method, String path, Path upload, int expect) {
    }

    private AdminClient() {
    }

    static int run(String noun, List<String> args, Caller caller, PrintStream out, PrintStream err) {
        DaemonTarget target;
        String token;
        try {
            target = DaemonTarget.resolve(args, caller, true);
            token = target.requireToken();
        } catch (DaemonTarget.Unresolved e) {
            err.println("vivarium: " + e.getMessage());
            return 1;
        }
        Call call = parse(noun, target.words());
        if (call == null) {
            err.print(USAGE);
            return 2;
        }
        String url = target.url();
        try {
            HttpResponse<String> response = send(url, token, call, caller, client(target.cacert(), url));
            JsonNode body = response.body().isEmpty() ? null : JSON.readTree(response.body());
            if (response.statusCode() == 403) {
                err.println(notAnOperator(target.tokenFrom()));
                return 1;
            }
            if (response.statusCode() != call.expect()) {
                err.println("vivarium: " + (body != null && body.has("error") ? body.get("error").asText() : response.body())
                        + " (HTTP " + response.statusCode() + ")");
                return 1;
            }
            out.print(render(noun, call, body));
            return 0;
        } catch (TlsFiles.Refused e) {
            err.println("vivarium: " + e.getMessage());
            return 1;
        } catch (ConnectException e) {
            err.println("vivarium: no daemon answers at " + target.describe() + " (start one with ./vivarium serve, or pass --url)");
            return 1;
        } catch (SSLHandshakeException e) {
            err.println("vivarium: the daemon at " + target.describe() + " is not trusted (" + e.getMessage() + "); pass --cacert PEM"
                    + " (or set VIVARIUM_CACERT) with the certificate it serves, the file given to serve --tls-cert");
            return 1;
        } catch (IOException e) {
            err.println("vivarium: " + e.getMessage() + (url.startsWith("http://")
                    ? " (if the daemon serves HTTPS, pass --url https://...)" : ""));
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        }
    }

    static Call parse(String noun, List<String> w) {
        String verb = w.isEmpty() ? "list" : w.get(0);
        int n = w.size();
        if (noun.equals("plugins")) {
            return switch (verb) {
                case "list" -> n <= 1 ? new Call("GET", "/v1/plugins", null, 200) : null;
                case "install" -> n == 2 ? new Call("POST", "/v1/plugins", Path.of(w.get(1)), 201) : null;
                case "update" -> n == 3 ? new Call("PUT", "/v1/plugins/" + w.get(1), Path.of(w.get(2)), 200) : null;
                case "remove" -> n == 2 ? new Call("DELETE", "/v1/plugins/" + w.get(1), null, 204) : null;
                default -> null;
            };
        }
        if (noun.equals("features")) {
            return switch (verb) {
                case "list" -> n <= 1 ? new Call("GET", "/v1/features", null, 200) : null;
                case "enable", "disable" -> n == 2 ? new Call("POST", "/v1/features/" + w.get(1) + "/" + verb, null, 200) : null;
                default -> null;
            };
        }
        return null;
    }

    /**
     * A client of {@code url} that trusts the certificates of {@code cacert}, else the JDK's
     * authorities; of a plain {@code http} URL, nothing (without a context of its own the JDK's
     * client builds the default one, which parses every CA certificate the JDK trusts: a quarter of
     * a command's run).
     */
    static HttpClient client(Path cacert, String url) throws TlsFiles.Refused {
        HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5));
        try {
            if (cacert != null) {
                builder.sslContext(TlsFiles.trusting(TlsFiles.certificates("--cacert", cacert)));
            } else if (url.regionMatches(true, 0, "http:", 0, 5)) {
                builder.sslContext(TlsFiles.trusting(List.of()));
            }
        } catch (GeneralSecurityException e) {
            throw new TlsFiles.Refused((cacert != null ? "--cacert " + cacert + ": cannot trust its certificates"
                    : "cannot set up the client's TLS") + " (" + e.getMessage() + ")");
        }
        return builder.build();
    }

    private static HttpResponse<String> send(String url, String token, Call call, Caller caller, HttpClient http)
            throws IOException, InterruptedException {
        HttpRequest.BodyPublisher body = call.upload() == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofFile(caller.workDir().resolve(call.upload()));
        HttpRequest request = HttpRequest.newBuilder(URI.create(url + call.path())).timeout(Duration.ofSeconds(120))
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/java-archive")
                .method(call.method(), body).build();
        try (HttpClient client = http) {
            return client.send(request, HttpResponse.BodyHandlers.ofString());
        }
    }

    /** The advice for a 403: these routes are daemon-wide administration, which needs an operator token. */
    static String notAnOperator(String tokenFile) {
        return "vivarium: plugins and features are daemon-wide administration, which needs an operator token, and the"
                + " token sent from " + tokenFile + " is not one (HTTP 403). In " + tokenFile + ", change 'admin' to"
                + " 'operator' on the line of the token that administers the daemon (a file from before the operator role"
                + " has no operator), or add a line '<token> <tenant> operator'; the daemon re-reads the file when it changes.";
    }

    static String render(String noun, Call call, JsonNode body) {
        if (body == null) {
            return "done\n";
        }
        StringBuilder sb = new StringBuilder();
        if (body.isArray() && noun.equals("plugins")) {
            sb.append(String.format("%-4s %-9s %-40s %-28s %s%n", "ID", "STATE", "BUNDLE", "VERSION", "PROVIDES"));
            for (JsonNode p : body) {
                sb.append(String.format("%-4s %-9s %-40s %-28s %s%n", p.path("id").asText(), p.path("state").asText(),
                        p.path("symbolic_name").asText(), p.path("version").asText(), join(p.path("provides"))));
            }
        } else if (body.isArray()) {
            sb.append(String.format("%-22s %-8s %s%n", "FEATURE", "ENABLED", "DESCRIPTION"));
            for (JsonNode f : body) {
                sb.append(String.format("%-22s %-8s %s%n", f.path("name").asText(), f.path("enabled").asBoolean() ? "yes" : "no",
                        f.path("description").asText()));
            }
        } else if (noun.equals("plugins")) {
            sb.append(call.method().equals("POST") ? "installed " : "updated ").append(body.path("symbolic_name").asText())
                    .append(' ').append(body.path("version").asText()).append(" (").append(body.path("state").asText()).append(")\n");
        } else {
            sb.append(body.path("name").asText()).append(body.path("enabled").asBoolean() ? " enabled" : " disabled").append('\n');
        }
        return sb.toString();
    }

    private static String join(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return String.join(",", out);
    }
}
