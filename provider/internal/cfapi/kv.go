package cfapi

import (
	"context"
	"fmt"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/kv"
)

// Namespace is a Workers KV namespace.
type Namespace struct {
	ID    string
	Title string
}

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
	for pager.Next() {
		if item := pager.Current(); item.Title == title {
			return Namespace{ID: item.ID, Title: item.Title}, true, nil
		}
	}
	if err := pager.Err(); err != nil {
		return Namespace{}, false, wrap("list KV namespaces", err)
	}
	return Namespace{}, false, nil
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
