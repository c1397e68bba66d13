package io.vivarium.http.internal;

import java.lang.System.Logger.Level;
import java.util.IdentityHashMap;
import java.util.Map;

import org.apache.felix.http.jetty.ConnectorFactory;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.LocalConnector;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.handler.ContextHandler;
import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;

/**
 * Makes Jetty answer its own errors in JSON. Felix HTTP offers no setting for Jetty's error
 * handler, but it hands every {@link ConnectorFactory} service the Jetty {@link Server} once that
 * server has started; this factory uses that moment to install {@link JsonErrorHandler} on the
 * server (errors before any context: bad request lines, 414, 431) and on each context handler
 * (ambiguous or malformed paths refused by the servlet context, Felix's own 404s). The connector
 * it must return is an in-memory {@link LocalConnector} that listens on no port; the daemon's
 * port stays Felix's own connector, configured as before. When this bundle stops (an update of
 * the http bundle) the previous handlers are put back, so Jetty keeps no class of a stale bundle.
 * On a node ({@code vivarium.node.id} set) the same moment switches off the HTTPS connector's
 * host-name check ({@link NodeTls}).
 */
@Component(service = ConnectorFactory.class)
public class JsonErrorPages implements ConnectorFactory {
    private static final System.Logger LOG = System.getLogger(JsonErrorPages.class.getName());

    /** The handlers replaced, by server or context, to restore on deactivation. */
    private final Map<Object, Request.Handler> replaced = new IdentityHashMap<>();
    private boolean node;

    @Activate
    void activate(BundleContext context) {
        String id = context.getProperty("vivarium.node.id");
        node = id != null && !id.isBlank();
    }

    @Override
    public synchronized Connector createConnector(Server server) {
        JsonErrorHandler handler = new JsonErrorHandler();
        replaced.putIfAbsent(server, server.getErrorHandler());
        server.setErrorHandler(handler);
        int contexts = 0;
        for (ContextHandler context : server.getDescendants(ContextHandler.class)) {
            replaced.putIfAbsent(context, context.getErrorHandler());
            context.setErrorHandler(handler);
            contexts++;
        }
        LOG.log(Level.DEBUG, "JSON error handler installed on the server and " + contexts + " context(s)");
        if (node) {
            LOG.log(Level.DEBUG, "a node: the host-name check is off on " + NodeTls.acceptAnyHost(server) + " HTTPS connector(s)");
        }
        return new LocalConnector(server);
    }

    @Deactivate
    synchronized void restore() {
        replaced.forEach((owner, previous) -> {
            if (owner instanceof Server s && s.getErrorHandler() instanceof JsonErrorHandler) {
                s.setErrorHandler(previous);
            } else if (owner instanceof ContextHandler c && c.getErrorHandler() instanceof JsonErrorHandler) {
                c.setErrorHandler(previous);
            }
        });
        replaced.clear();
    }
}
