package io.vivarium.fleet.internal;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;

/**
 * Where a listening node is: {@code host[:port]} with port 80 when it is left out (as the seed
 * says), an IPv6 address written {@code [addr]:port}. Parsed before anything is dialled.
 */
record NodeAddress(String host, int port) {
    static final int DEFAULT_PORT = 80;
    private static final Pattern IPV6 = Pattern.compile("\\[([0-9A-Fa-f:.]+)](?::(\\d{1,5}))?");
    private static final Pattern NAME = Pattern.compile("([A-Za-z0-9]([A-Za-z0-9.-]{0,252}))(?::(\\d{1,5}))?");

    static NodeAddress parse(String text) {
        if (text == null || text.isBlank()) {
            throw ApiException.badRequest("address is required: the node's host[:port] (IPv6 as [addr]:port); nothing was dialled");
        }
        Matcher v6 = IPV6.matcher(text);
        if (v6.matches()) {
            if (!(literal(v6.group(1)) instanceof java.net.Inet6Address)) {
                throw ApiException.badRequest("address '" + text + "': [" + v6.group(1) + "] is not an IPv6 address; nothing was dialled");
            }
            return new NodeAddress("[" + v6.group(1) + "]", port(v6.group(2), text));
        }
        Matcher name = NAME.matcher(text);
        if (!name.matches() || name.group(1).endsWith(".") || name.group(1).contains("..")) {
            throw ApiException.badRequest("address '" + text + "' is not host[:port] (a name or IPv4 address, an IPv6 "
                    + "address as [addr]:port); nothing was dialled");
        }
        return new NodeAddress(name.group(1), port(name.group(3), text));
    }

    /** An IP literal as the JDK reads it (no name lookup: the text is made of hex digits, colons and dots only), or null. */
    private static java.net.InetAddress literal(String text) {
        try {
            return java.net.InetAddress.getByName("[" + text + "]");
        } catch (java.net.UnknownHostException e) {
            return null;
        }
    }

    private static int port(String digits, String text) {
        if (digits == null) {
            return DEFAULT_PORT;
        }
        int port = Integer.parseInt(digits);
        if (port < 1 || port > 65535) {
            throw ApiException.badRequest("address '" + text + "': port " + port + " is not between 1 and 65535; nothing was dialled");
        }
        return port;
    }

    /** The address as the API shows it and a URL holds it. */
    @Override
    public String toString() {
        return host + ":" + port;
    }
}
