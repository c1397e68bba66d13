package io.vivarium.http.internal;

import java.lang.System.Logger.Level;

import org.apache.felix.http.jetty.ConnectorFactory;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.LocalConnector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.handler.ContextHandler;
import org.osgi.service.component.annotations.Component;

/**
 * Makes Jetty answer its own errors in JSON. Felix HTTP offers no setting for Jetty's error
 * handler, but it hands every {@link ConnectorFactory} service the Jetty {@link Server} once that
 * server has started; this factory uses that moment to install {@link JsonErrorHandler} on the
 * server (errors before any context: bad request lines, 414, 431) and on each context handler
 * (ambiguous or malformed paths refused by the servlet context, Felix's own 404s). The connector
 * it must return is an in-memory {@link LocalConnector} that listens on no port; the daemon's
 * port stays Felix's own connector, configured as before.
 */
@Component(service = ConnectorFactory.class)
public class JsonErrorPages implements ConnectorFactory {
    private static final System.Logger LOG = System.getLogger(JsonErrorPages.class.getName());

    @Override
    public Connector createConnector(Server server) {
        JsonErrorHandler handler = new JsonErrorHandler();
        server.setErrorHandler(handler);
        int contexts = 0;
        for (ContextHandler context : server.getDescendants(ContextHandler.class)) {
            context.setErrorHandler(handler);
            contexts++;
        }
        LOG.log(Level.DEBUG, "JSON error handler installed on the server and " + contexts + " context(s)");
        return new LocalConnector(server);
    }
}
