package io.vivarium.api.http;

import java.util.regex.Pattern;

/**
 * How a master acts for a caller on a node's API: with the node's pairing secret as its bearer
 * token, the caller's tenant and role in two headers. Both sides use these names. Since 1.3.
 */
public final class NodeHeaders {
    /** The tenant the master acts for. */
    public static final String TENANT = "Vivarium-Tenant";
    /** The role it acts with, in lower case ({@code user}, {@code admin}, {@code operator}). */
    public static final String ROLE = "Vivarium-Role";
    /** The tenants a master can act for: letters, digits, {@code .}, {@code _} and {@code -}, up to 64, not starting with a sign. */
    public static final Pattern TENANT_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");

    private NodeHeaders() {
    }
}
