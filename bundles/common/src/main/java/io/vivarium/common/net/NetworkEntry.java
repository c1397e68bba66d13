package io.vivarium.common.net;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One entry of a network policy: an IPv4 CIDR and, optionally, one port —
 * {@code 198.51.100.0/24}, {@code 203.0.113.7/32:443}, or a bare address for its /32.
 *
 * @param network the network's address (host bits zero)
 * @param prefix its prefix length, 0 to 32
 * @param port the one port it names (1 to 65535), or null for every port
 */
public record NetworkEntry(int network, int prefix, Integer port) {
    private static final Pattern FORM = Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})(?:/(\\d{1,2}))?(?::(\\d{1,5}))?");

    public NetworkEntry {
        if (prefix < 0 || prefix > 32) {
            throw new IllegalArgumentException("a prefix length is 0 to 32, not " + prefix);
        }
        if (port != null && (port < 1 || port > 65535)) {
            throw new IllegalArgumentException("a port is 1 to 65535, not " + port);
        }
        network &= mask(prefix);
    }

    /** Parses {@code text}; the message of the exception says what is wrong with it. */
    public static NetworkEntry parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("an entry is a CIDR such as 198.51.100.0/24, optionally with :PORT; got null");
        }
        Matcher m = FORM.matcher(text.strip());
        if (!m.matches()) {
            throw new IllegalArgumentException("\"" + text + "\" is not an IPv4 CIDR with an optional port, such as"
                    + " 198.51.100.0/24 or 203.0.113.7/32:443 (IPv6 is not supported)");
        }
        int address = 0;
        for (int i = 1; i <= 4; i++) {
            int octet = Integer.parseInt(m.group(i));
            if (octet > 255) {
                throw new IllegalArgumentException("\"" + text + "\": " + octet + " is not an address byte (0 to 255)");
            }
            address = address << 8 | octet;
        }
        int prefix = m.group(5) == null ? 32 : Integer.parseInt(m.group(5));
        Integer port = m.group(6) == null ? null : Integer.parseInt(m.group(6));
        try {
            return new NetworkEntry(address, prefix, port);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("\"" + text + "\": " + e.getMessage());
        }
    }

    private static int mask(int prefix) {
        return prefix == 0 ? 0 : -1 << (32 - prefix);
    }

    /** Whether every address and port {@code other} names is one this entry names too. */
    public boolean covers(NetworkEntry other) {
        return prefix <= other.prefix && (other.network & mask(prefix)) == network
                && (port == null || port.equals(other.port));
    }

    /** Whether the two name an address in common (ports aside). */
    public boolean overlaps(NetworkEntry other) {
        int shorter = Math.min(prefix, other.prefix);
        return (network & mask(shorter)) == (other.network & mask(shorter));
    }

    /** The network as {@code a.b.c.d/p}, without the port. */
    public String cidr() {
        return address(network) + "/" + prefix;
    }

    /** The address of the {@code n}th host of the network (0 is the network's own address). */
    public String host(int n) {
        return address(network + n);
    }

    public static String address(int a) {
        return (a >>> 24) + "." + (a >>> 16 & 0xff) + "." + (a >>> 8 & 0xff) + "." + (a & 0xff);
    }

    /** The canonical text: {@code a.b.c.d/p} and {@code :port} when it has one. */
    @Override
    public String toString() {
        return cidr() + (port == null ? "" : ":" + port);
    }
}
