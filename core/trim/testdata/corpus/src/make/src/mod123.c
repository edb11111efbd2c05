#include <stdio.h>

int mod123(int x)
{
    return x + 123;
}
