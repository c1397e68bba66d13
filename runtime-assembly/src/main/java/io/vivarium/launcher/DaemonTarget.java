package io.vivarium.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Which daemon a command line talks to, and with which token: flags first ({@code --url},
 * {@code --token}, {@code --token-file}, {@code --cacert}, {@code --state}), then the environment
 * ({@code VIVARIUM_URL}, {@code VIVARIUM_TOKEN}, {@code VIVARIUM_TOKEN_FILE}, {@code VIVARIUM_CACERT},
 * {@code VIVARIUM_STATE}), then the state directory ({@code ./var} unless named; relative paths are the
 * caller's, see {@link Caller}): the address a
 * running daemon wrote there ({@value #ADDRESS}) and its token file. When nothing names a daemon,
 * the error says what was tried.
 *
 * @param url the daemon's base URL
 * @param from where the URL came from, for messages
 * @param token the bearer token, or null when none was found (the message says where it looked)
 * @param tokenFrom where the token came from, or where it was looked for
 * @param cacert the PEM file of the certificate to trust, or null
 * @param words the arguments that are not these options, in order
 */
record DaemonTarget(String url, String from, String token, String tokenFrom, Path cacert, List<String> words) {

    /** The options this reads (each with a value); every other argument is the command's. */
    private static final java.util.Set<String> OPTIONS = java.util.Set.of("--url", "--token", "--token-file", "--cacert", "--state");

    /** The file a running daemon writes its URL to, in its state directory. */
    static final String ADDRESS = "address";

    /** Not enough to reach a daemon: the message says what was tried. */
    static final class Unresolved extends Exception {
        private static final long serialVersionUID = 1L;

        Unresolved(String message) {
            super(message);
        }
    }

    /**
     * Resolves the target from {@code args} and {@code env}; {@code operator}: prefer the token
     * file's first operator token (daemon-wide administration), else its first token.
     */
    static DaemonTarget resolve(List<String> args, Caller caller, boolean operator) throws Unresolved {
        Map<String, String> env = caller.env();
        String url = null;
        String urlFrom = null;
        String token = null;
        String tokenFrom = null;
        Path tokenFile = null;
        Path cacert = env.containsKey("VIVARIUM_CACERT") ? caller.path(env.get("VIVARIUM_CACERT")) : null;
        Path state = caller.path(env.getOrDefault("VIVARIUM_STATE", "var"));
        List<String> words = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (!OPTIONS.contains(a)) {
                words.add(a);
                continue;
            }
            if (i + 1 >= args.size()) {
                throw new Unresolved(a + " needs a value" + (a.equals("--url") ? ", e.g. --url http://127.0.0.1:8889" : ""));
            }
            String value = args.get(++i);
            switch (a) {
                case "--url" -> {
                    url = value;
                    urlFrom = a;
                }
                case "--token" -> {
                    token = value;
                    tokenFrom = a;
                }
                case "--token-file" -> tokenFile = caller.path(value);
                case "--cacert" -> cacert = caller.path(value);
                default -> state = caller.path(value);
            }
        }
        if (url == null && env.get("VIVARIUM_URL") != null) {
            url = env.get("VIVARIUM_URL");
            urlFrom = "$VIVARIUM_URL";
        }
        Path address = state.resolve(ADDRESS);
        if (url == null) {
            try {
                url = Files.readString(address, StandardCharsets.UTF_8).strip();
                urlFrom = address.toString();
            } catch (IOException e) {
                throw new Unresolved("no daemon named: tried --url (not given), $VIVARIUM_URL (not set) and " + address
                        + " (" + (Files.exists(address) ? "unreadable" : "missing: no daemon started with this state directory")
                        + "); start one with ./vivarium serve, or pass --url or --state");
            }
        }
        if (token == null && env.get("VIVARIUM_TOKEN") != null) {
            token = env.get("VIVARIUM_TOKEN");
            tokenFrom = "$VIVARIUM_TOKEN";
        }
        if (token == null) {
            if (tokenFile == null) {
                tokenFile = env.containsKey("VIVARIUM_TOKEN_FILE") ? caller.path(env.get("VIVARIUM_TOKEN_FILE")) : state.resolve("tokens");
            }
            tokenFrom = tokenFile.toString();
            token = tokenIn(tokenFile, operator);
        }
        return new DaemonTarget(url.replaceAll("/+$", ""), urlFrom, token, tokenFrom, cacert, List.copyOf(words));
    }

    /** The first operator token of the file when {@code operator}, else (or failing that) its first token; null if none. */
    private static String tokenIn(Path file, boolean operator) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            return null;
        }
        String first = null;
        for (String line : lines) {
            String t = line.strip();
            if (t.isEmpty() || t.startsWith("#")) {
                continue;
            }
            String[] fields = t.split("\\s+");
            if (operator && fields.length == 3 && fields[2].equalsIgnoreCase("operator")) {
                return fields[0];
            }
            if (first == null) {
                first = fields[0];
            }
        }
        return first;
    }

    /** The token, or why there is none: what was tried. */
    String requireToken() throws Unresolved {
        if (token == null) {
            throw new Unresolved("no token: tried --token (not given), $VIVARIUM_TOKEN (not set) and the token file " + tokenFrom
                    + " (missing or empty; pass --token-file or --state)");
        }
        return token;
    }

    /** The daemon as messages name it: its URL and where it came from. */
    String describe() {
        return url + " (from " + from + ")";
    }
}
