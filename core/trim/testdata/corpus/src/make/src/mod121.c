#include <stdio.h>

int mod121(int x)
{
    return x + 121;
}
