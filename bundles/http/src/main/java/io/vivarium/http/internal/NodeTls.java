package io.vivarium.http.internal;

import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;

/**
 * A node's HTTPS takes requests for any host name. Jetty's HTTPS connector, as Felix HTTP makes it,
 * answers 400 "Invalid SNI" to a request whose Host its certificate does not name, and Felix offers
 * no setting for that check. A node's self-signed certificate names no address the master reaches
 * it by (a node does not know it, behind NAT or a forward): the master pins the certificate by its
 * digest (the pairing code's first half) instead, which a name check adds nothing to.
 */
final class NodeTls {

    private NodeTls() {
    }

    /** Switches the host-name check off on each HTTPS connector of {@code server}; returns how many. */
    static int acceptAnyHost(Server server) {
        int changed = 0;
        for (Connector c : server.getConnectors()) {
            HttpConnectionFactory http = c.getConnectionFactory(HttpConnectionFactory.class);
            SecureRequestCustomizer secure = http == null ? null : http.getHttpConfiguration().getCustomizer(SecureRequestCustomizer.class);
            if (secure != null) {
                secure.setSniHostCheck(false);
                changed++;
            }
        }
        return changed;
    }
}
