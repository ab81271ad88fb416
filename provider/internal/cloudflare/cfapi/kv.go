package cfapi

import (
	"context"
	"fmt"
	"io"
	"net/url"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/option"
)

// Namespace is a Workers KV namespace.
type Namespace struct {
	ID    string
	Title string
}

// CodeNamespaceTitleTaken is Workers KV's refusal of a title the account
// already has ("a namespace with this account ID and title already exists").
const CodeNamespaceTitleTaken = 10014

// CreateNamespace creates a KV namespace titled title.
func (c *Client) CreateNamespace(ctx context.Context, title string) (Namespace, error) {
	ns, err := c.api.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cf.F(c.accountID), Title: cf.F(title)})
	if err != nil {
		return Namespace{}, wrap(fmt.Sprintf("create KV namespace %q", title), err)
	}
	return Namespace{ID: ns.ID, Title: ns.Title}, nil
}

// FindNamespace returns the namespace titled title, or ok=false. The API has
// no title filter, so every page is read.
func (c *Client) FindNamespace(ctx context.Context, title string) (ns Namespace, ok bool, err error) {
	pager := c.api.KV.Namespaces.ListAutoPaging(ctx, kv.NamespaceListParams{
		AccountID: cf.F(c.accountID),
		PerPage:   cf.F(100.0),
	})
	item, ok, err := findListed(pager, func(n kv.Namespace) bool { return n.Title == title }, "list KV namespaces")
	if !ok {
		return Namespace{}, false, err
	}
	return Namespace{ID: item.ID, Title: item.Title}, true, nil
}

// GetNamespace reads a namespace by ID; IsNotFound tells a missing one.
func (c *Client) GetNamespace(ctx context.Context, id string) (Namespace, error) {
	ns, err := c.api.KV.Namespaces.Get(ctx, id, kv.NamespaceGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		return Namespace{}, wrap(fmt.Sprintf("read KV namespace %s", id), err)
	}
	return Namespace{ID: ns.ID, Title: ns.Title}, nil
}

// RenameNamespace changes a namespace's title in place.
func (c *Client) RenameNamespace(ctx context.Context, id, title string) error {
	_, err := c.api.KV.Namespaces.Update(ctx, id, kv.NamespaceUpdateParams{AccountID: cf.F(c.accountID), Title: cf.F(title)})
	return wrap(fmt.Sprintf("rename KV namespace %s to %q", id, title), err)
}

// DeleteNamespace deletes a namespace and its keys; a missing one is fine.
func (c *Client) DeleteNamespace(ctx context.Context, id string) error {
	_, err := c.api.KV.Namespaces.Delete(ctx, id, kv.NamespaceDeleteParams{AccountID: cf.F(c.accountID)})
	if err = wrap(fmt.Sprintf("delete KV namespace %s", id), err); err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}

// codeKVKeyNotFound answers a read of a missing key ("get: 'key not
// found'"); a missing namespace is another 404.
const codeKVKeyNotFound = 10009

// GetValue reads a key's value; ok=false when the key does not exist.
func (c *Client) GetValue(ctx context.Context, namespaceID, key string) (value []byte, ok bool, err error) {
	res, err := c.api.KV.Namespaces.Values.Get(ctx, namespaceID, url.PathEscape(key), kv.NamespaceValueGetParams{AccountID: cf.F(c.accountID)})
	if err = wrap(fmt.Sprintf("read key %q of KV namespace %s", key, namespaceID), err); err != nil {
		if HasCode(err, codeKVKeyNotFound) {
			return nil, false, nil
		}
		return nil, false, err
	}
	defer res.Body.Close()
	value, err = io.ReadAll(res.Body)
	if err != nil {
		return nil, false, fmt.Errorf("read key %q of KV namespace %s: %w", key, namespaceID, err)
	}
	return value, true, nil
}

// PutValue writes a key's value, replacing any earlier one. The body is the
// raw value: the SDK's own encoding would send a JSON object, which KV
// stores verbatim.
func (c *Client) PutValue(ctx context.Context, namespaceID, key string, value []byte) error {
	_, err := c.api.KV.Namespaces.Values.Update(ctx, namespaceID, url.PathEscape(key),
		kv.NamespaceValueUpdateParams{AccountID: cf.F(c.accountID)},
		option.WithRequestBody("application/octet-stream", value))
	return wrap(fmt.Sprintf("write key %q of KV namespace %s", key, namespaceID), err)
}

// ListKeys returns up to limit key names of a namespace, in order (limit
// 10-1000, the API's bounds), without paging further.
func (c *Client) ListKeys(ctx context.Context, namespaceID string, limit int) ([]string, error) {
	page, err := c.api.KV.Namespaces.Keys.List(ctx, namespaceID, kv.NamespaceKeyListParams{
		AccountID: cf.F(c.accountID), Limit: cf.F(float64(limit)),
	})
	if err != nil {
		return nil, wrap(fmt.Sprintf("list keys of KV namespace %s", namespaceID), err)
	}
	names := make([]string, 0, len(page.Result))
	for _, k := range page.Result {
		names = append(names, k.Name)
	}
	return names, nil
}
