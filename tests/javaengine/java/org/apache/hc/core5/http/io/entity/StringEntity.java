/*
 * neve's replacement for httpcore5 5.2.1's StringEntity, compiled by
 * tests/javaengine/build.py against Debian's httpcore5 and relocated with it for
 * Iceberg-Java's REST client. In 5.2.1 a StringEntity made from a string alone encodes
 * it as ISO-8859-1, so every character outside Latin-1 (an emoji in a table comment, a
 * Chinese namespace property) reaches a REST server as '?'. httpcore5 5.4 and later,
 * which Iceberg ships, encode it as UTF-8; so does this class. The other constructors
 * keep 5.2.1's meaning: the content type's charset, else UTF-8.
 */
package org.apache.hc.core5.http.io.entity;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

import org.apache.hc.core5.http.ContentType;

public class StringEntity extends AbstractHttpEntity {

    private final byte[] content;

    public StringEntity(String text, ContentType contentType, String contentEncoding, boolean chunked) {
        super(contentType, contentEncoding, chunked);
        if (text == null) {
            throw new NullPointerException("the entity's text is null");
        }
        Charset charset = contentType == null ? null : contentType.getCharset();
        this.content = text.getBytes(charset == null ? StandardCharsets.UTF_8 : charset);
    }

    public StringEntity(String text, ContentType contentType, boolean chunked) {
        this(text, contentType, null, chunked);
    }

    public StringEntity(String text, ContentType contentType) {
        this(text, contentType, null, false);
    }

    public StringEntity(String text, Charset charset) {
        this(text, ContentType.TEXT_PLAIN.withCharset(charset), null, false);
    }

    public StringEntity(String text, Charset charset, boolean chunked) {
        this(text, ContentType.TEXT_PLAIN.withCharset(charset), null, chunked);
    }

    public StringEntity(String text) {
        this(text, ContentType.TEXT_PLAIN.withCharset(StandardCharsets.UTF_8), null, false);
    }

    @Override
    public final boolean isRepeatable() {
        return true;
    }

    @Override
    public final long getContentLength() {
        return content.length;
    }

    @Override
    public final InputStream getContent() throws IOException {
        return new ByteArrayInputStream(content);
    }

    @Override
    public final void writeTo(OutputStream out) throws IOException {
        if (out == null) {
            throw new NullPointerException("the output stream is null");
        }
        out.write(content);
        out.flush();
    }

    @Override
    public final boolean isStreaming() {
        return false;
    }

    @Override
    public final void close() throws IOException {
        // nothing to release: the content is in memory
    }
}
