package io.vivarium.common.state;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * Where the database is, from a URL an operator writes: {@code postgresql://user:password@host:port/db?params}
 * ({@code postgres://} too), split into what JDBC takes. The password is kept apart and never
 * part of {@link #toString()}, which is what logs, errors and features show.
 */
public record PostgresUrl(String jdbc, String user, String password, String shown) {

    public static PostgresUrl parse(String url) {
        if (url == null || url.isBlank()) {
            throw new IllegalArgumentException("the state-postgres feature needs the database's URL: --state-url "
                    + "postgresql://USER:PASSWORD@HOST:PORT/DATABASE (or url in the io.vivarium.state.postgres configuration)");
        }
        URI uri;
        try {
            uri = new URI(url.strip());
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("the state URL is not a URL (" + e.getReason() + "); expected "
                    + "postgresql://USER:PASSWORD@HOST:PORT/DATABASE");
        }
        if (!"postgresql".equals(uri.getScheme()) && !"postgres".equals(uri.getScheme())) {
            throw new IllegalArgumentException("the state URL must start with postgresql://, not " + uri.getScheme() + ":");
        }
        String path = uri.getRawPath() == null ? "" : uri.getRawPath();
        if (uri.getHost() == null || path.length() < 2) {
            throw new IllegalArgumentException("the state URL names no host or no database; expected "
                    + "postgresql://USER:PASSWORD@HOST:PORT/DATABASE");
        }
        String user = null;
        String password = null;
        if (uri.getRawUserInfo() != null) {
            String[] info = uri.getRawUserInfo().split(":", 2);
            user = decode(info[0]);
            password = info.length > 1 ? decode(info[1]) : null;
        }
        String hostPort = uri.getHost() + (uri.getPort() > 0 ? ":" + uri.getPort() : "");
        String query = uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery();
        String jdbc = "jdbc:postgresql://" + hostPort + path + query;
        String shown = "postgresql://" + (user == null ? "" : user + (password == null ? "" : ":***") + "@") + hostPort + path;
        return new PostgresUrl(jdbc, user, password, shown);
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    /** Takes {@code text} (an error's message) with the password, if it appears, masked. */
    public String mask(String text) {
        return password == null || password.isEmpty() || text == null ? text : text.replace(password, "***");
    }

    @Override
    public String toString() {
        return shown;
    }
}
