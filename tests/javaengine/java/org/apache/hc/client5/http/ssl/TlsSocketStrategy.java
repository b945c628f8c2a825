/*
 * A stand-in for httpclient5 5.4's TlsSocketStrategy, which Iceberg-Java's REST client
 * names but Debian's httpclient5 5.2.1 lacks. Iceberg uses it only when a TLS
 * configurer is set; for plain http its presence is enough to load the client.
 */
package org.apache.hc.client5.http.ssl;

public interface TlsSocketStrategy {
}
